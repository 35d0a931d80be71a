// The adapters' low-rank products of one pass for the native backends, Punica/SGMV style: the
// base linear has run once over every row; then, per slot with rows in the pass, that slot's rows
// of x go through its adapter's A and scaled B and the product is added into y, in one call of the
// f32 addon (f32LoraAdd: gather, two GEMMs, scatter-add; a view instead of the gather when the
// rows are contiguous, as the runner packs each sequence's rows). Each pair is packed for it once
// per adapter, not per step. Plain loops where the addon (or that call) is not built.
import type { LoraModule, LoraPair, LoraWeights } from '../../lora/lora-weights';
import type { PassLora } from './decoder-backend';
import type { F32Addon } from './native-f32';

/** One slot's rows in a pass. */
interface SlotRows {
  weights: LoraWeights;
  /** The rows, ascending. */
  rows: Int32Array;
}

/** Where a linear's output lies: row r, column j at y[r * stride + offset + j] (the gate | up halves of a fused output). */
export interface OutputLayout {
  stride: number;
  offset: number;
}

/** A pair as f32LoraAdd reads it: A [rank, in] and scaled B [out, rank], packed. */
interface PackedPair {
  a: Float32Array;
  b: Float32Array;
}

/** The f32 addon's packed copies of every adapter's pairs, made on first use and dropped with the adapter. */
const packedPairs = new WeakMap<LoraPair, PackedPair>();

type LoraAddon = F32Addon & Required<Pick<F32Addon, 'f32LoraAdd'>>;

export class LoraDeltas {
  private readonly groups: SlotRows[];
  private readonly addon: LoraAddon | null;
  private readonly dims = new Int32Array(5);

  /** `lora`: the pass's slots and rows; `addon`: the f32 addon (null, or a build without f32LoraAdd: plain loops). */
  constructor(lora: PassLora, addon: F32Addon | null) {
    this.groups = slotGroups(lora);
    this.addon = addon?.f32LoraAdd ? (addon as LoraAddon) : null;
  }

  /**
   * y += (x_s Aᵀ) bᵀ over each slot's rows s, for `module` of `layer`: x [rows, in] row-major, y
   * [rows, ·] laid out as `out` says (default: [rows, outFeatures]).
   */
  add(layer: number, module: LoraModule, x: Float32Array, y: Float32Array, out?: OutputLayout): void {
    for (const group of this.groups) {
      const pair = group.weights.layers[layer]?.get(module);
      if (!pair) continue;
      const { stride, offset } = out ?? { stride: pair.outFeatures, offset: 0 };
      if (this.addon) {
        const packed = this.packed(this.addon, pair);
        this.dims.set([pair.inFeatures, pair.outFeatures, pair.rank, stride, offset]);
        this.addon.f32LoraAdd(packed.a, packed.b, x, y, group.rows, this.dims);
      } else {
        addProduct(pair, x, y, group.rows, stride, offset);
      }
    }
  }

  private packed(addon: F32Addon, pair: LoraPair): PackedPair {
    let p = packedPairs.get(pair);
    if (!p) {
      p = { a: addon.f32Pack(pair.a, pair.rank, pair.inFeatures), b: addon.f32Pack(pair.b, pair.outFeatures, pair.rank) };
      packedPairs.set(pair, p);
    }
    return p;
  }
}

/** The slots with rows in the pass, each with its rows. */
function slotGroups(lora: PassLora): SlotRows[] {
  const rowsOf = new Map<number, number[]>();
  lora.rowSlot.forEach((slot, row) => {
    if (slot < 0) return;
    if (!lora.slots[slot]) throw new Error(`row ${row} names LoRA slot ${slot}, which holds no adapter`);
    const rows = rowsOf.get(slot) ?? [];
    rows.push(row);
    rowsOf.set(slot, rows);
  });
  return [...rowsOf].map(([slot, rows]) => ({ weights: lora.slots[slot]!, rows: Int32Array.from(rows) }));
}

/** The same product in plain loops (where the f32 addon is not built). */
function addProduct(pair: LoraPair, x: Float32Array, y: Float32Array, rows: Int32Array, stride: number, offset: number): void {
  const { rank, inFeatures: k, outFeatures: n, a, b } = pair;
  const t = new Float64Array(rank);
  for (const row of rows) {
    for (let r = 0; r < rank; r++) {
      let sum = 0;
      for (let i = 0; i < k; i++) sum += x[row * k + i] * a[r * k + i];
      t[r] = sum;
    }
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let r = 0; r < rank; r++) sum += t[r] * b[j * rank + r];
      y[row * stride + offset + j] += sum;
    }
  }
}
