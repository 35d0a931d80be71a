// native-f32's layers for a pass with LoRA rows. f32Qkv and f32Mlp fuse the linears with RoPE,
// the norms and the SwiGLU, leaving nowhere to add an adapter's product; here each linear is one
// f32Gemm over every row, the adapters' products follow it (lora-delta.ts), and RoPE, SwiGLU and
// the norms run in the attention addon. Passes without adapter rows keep the fused calls.
import type { ModelArchConfig } from '../../types';
import type { RopeTable } from '../../graph/layer-options';
import type { NativeKernels } from '../native-kernels';
import type { PassRows } from './decoder-backend';
import type { LoraDeltas } from './lora-delta';
import type { Activations, F32Addon, PackedLayer } from './native-f32';
import { ropeRows, type RopeRows } from './rope-rows';

/** What the layers read of the small decoder. */
export interface SmallDecoderShape {
  readonly config: ModelArchConfig;
  readonly addon: F32Addon;
  readonly native: NativeKernels;
  readonly qDim: number;
  readonly kvDim: number;
  readonly inter: number;
  readonly eps: number;
}

export class AdaptedLayers {
  private readonly rows: number;
  private readonly rope: RopeRows | null;
  private readonly projected: Float32Array;
  private readonly gateUp: Float32Array;
  private readonly act: Float32Array;

  constructor(
    private readonly d: SmallDecoderShape,
    pass: PassRows,
    private readonly lora: LoraDeltas,
    rope: RopeTable | null,
  ) {
    this.rows = pass.rows;
    this.rope = ropeRows(rope, pass.positions);
    this.projected = new Float32Array(this.rows * d.config.hiddenSize);
    this.gateUp = new Float32Array(this.rows * 2 * d.inter);
    this.act = new Float32Array(this.rows * d.inter);
  }

  /** q, k, v of layer l from b.normed, adapted, then RoPE on q and k (f32Qkv's work). */
  attentionInputs(l: number, w: PackedLayer, b: Activations): void {
    const { addon, native, config: c, qDim, kvDim } = this.d;
    const n = this.rows;
    const h = c.hiddenSize;
    addon.f32Gemm(w.q, b.normed, b.q, n, qDim, h);
    addon.f32Gemm(w.k, b.normed, b.k, n, kvDim, h);
    addon.f32Gemm(w.v, b.normed, b.v, n, kvDim, h);
    this.lora.add(l, 'q_proj', b.normed, b.q);
    this.lora.add(l, 'k_proj', b.normed, b.k);
    this.lora.add(l, 'v_proj', b.normed, b.v);
    if (this.rope) {
      native.rope(b.q, this.rope.cos, this.rope.sin, c.numHeads, c.headDim);
      native.rope(b.k, this.rope.cos, this.rope.sin, c.numKvHeads, c.headDim);
    }
  }

  /** o_proj and the residual, post norm, the SwiGLU MLP and the residual, then the `next` norm into b.normed (f32Mlp's work), adapted. */
  afterAttention(l: number, w: PackedLayer, b: Activations, residual: Float32Array, next: Float32Array): void {
    const { addon, native, config: c, qDim, inter, eps } = this.d;
    const n = this.rows;
    const h = c.hiddenSize;
    addon.f32Gemm(w.o, b.attn, this.projected, n, h, qDim);
    this.lora.add(l, 'o_proj', b.attn, this.projected);
    native.addRmsNorm(this.projected, residual, w.postNorm, b.normed, eps);
    addon.f32Gemm(w.gateUp, b.normed, this.gateUp, n, 2 * inter, h);
    this.lora.add(l, 'gate_proj', b.normed, this.gateUp, { stride: 2 * inter, offset: 0 });
    this.lora.add(l, 'up_proj', b.normed, this.gateUp, { stride: 2 * inter, offset: inter });
    native.siluMul(this.gateUp, this.act, inter);
    addon.f32Gemm(w.down, this.act, this.projected, n, h, inter);
    this.lora.add(l, 'down_proj', this.act, this.projected);
    native.addRmsNorm(this.projected, residual, next, b.normed, eps);
  }

  free(): void {
    this.d.native.free(this.projected, this.gateUp, this.act);
  }
}
