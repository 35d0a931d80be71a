// LoRA inside a decoder segment's graph (onnx-segments): the adapters are graph inputs, not
// initializers, so one session serves every adapter and the runner swaps them without a rebuild.
// Per adapted linear, every slot's A stacked into one [maxLoras·maxRank, in] input and every
// slot's scaled Bᵀ into one [maxLoras·maxRank, out] input (a rank below maxRank zero-padded),
// and one mask [rows, maxLoras·maxRank] per segment holding 1 in the columns of its row's slot:
//     y += ((x Aᵀ) ⊙ mask) Bᵀ
// Two GEMMs over all rows whatever the mix of adapters: no per-slot Slice or Gather in the graph,
// no dependence on the rows' order, and the same graph for a pass of one adapter or of maxLoras.
// The cost is maxLoras·maxRank columns per linear even for base rows (docs/perf/lora.md).
import type { LoraModule } from '../lora/lora-weights';
import type { GraphBuilder } from './graph-builder';
import { castTo, type ComputeDtype } from './compute-dtype';
import { OnnxDataType } from './onnx-proto';
import { attrInt } from './graph-builder';

/** How many adapters of what rank a segment's LoRA inputs hold. */
export interface LoraGraphShape {
  maxLoras: number;
  maxRank: number;
}

export const LoraInputs = {
  /** [rows, maxLoras·maxRank]: 1 where the column belongs to the row's slot, else 0 (base rows: all 0). */
  mask: 'lora_mask',
  /** Per module: stacked A [maxLoras·maxRank, in]. */
  a: (module: LoraModule) => `lora_a.${module}`,
  /** Per module: stacked scaled Bᵀ [maxLoras·maxRank, out]. */
  bt: (module: LoraModule) => `lora_bt.${module}`,
} as const;

/** Adds the adapters' products to linears of one segment graph. */
export class LoraGraph {
  private mask: string | null = null;

  constructor(
    private readonly g: GraphBuilder,
    private readonly shape: LoraGraphShape,
    private readonly dtype: ComputeDtype,
  ) {}

  /** y + ((x Aᵀ) ⊙ mask) Bᵀ for `module` (x [rows, in], y [rows, out], in the graph's dtype). */
  adapt(module: LoraModule, x: string, y: string, inFeatures: number, outFeatures: number): string {
    const { g, dtype } = this;
    const width = this.shape.maxLoras * this.shape.maxRank;
    const f32 = OnnxDataType.FLOAT;
    const a = castTo(g, g.input(LoraInputs.a(module), f32, [width, inFeatures]), 'float32', dtype);
    const bt = castTo(g, g.input(LoraInputs.bt(module), f32, [width, outFeatures]), 'float32', dtype);
    const t = g.op('Gemm', [x, a], { transB: attrInt(1) });
    const delta = g.op('MatMul', [g.op('Mul', [t, this.rowMask()]), bt]);
    return g.op('Add', [y, delta]);
  }

  private rowMask(): string {
    this.mask ??= castTo(this.g, this.g.input(LoraInputs.mask, OnnxDataType.FLOAT, ['rows', this.shape.maxLoras * this.shape.maxRank]), 'float32', this.dtype);
    return this.mask;
  }
}
