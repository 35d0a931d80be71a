// A small float32 llama/qwen2 decoder run wholly in the addons: each layer's linears, RoPE, SwiGLU
// and RMSNorms in two calls of ortllm_f32 (native/src/f32-decoder.cc), with the attention addon's
// writeKv and attention between them, and no onnxruntime session. Which models take it (hidden
// size up to 128 where the addon has AVX2 or AVX-512 kernels): choose-backend.ts.
//
// Why: at stories260K's size (dim 64, 5 layers, vocab 512) a step's arithmetic is a few
// microseconds, and the step was per-call cost (six onnxruntime session runs). Figures, the size
// policy's measurements on AVX-512 and AVX2, and what was measured and not taken:
// docs/perf/small-decoder.md.
import type { ModelArchConfig, ModelWeights } from '../../types';
import { concatArrays, requireWeight, toF32 } from '../../graph/weights';
import type { NativeKernels } from '../native-kernels';
import { nativeAddonPath } from '../native-kernels';
import type { DecoderLayerOptions } from '../../graph/layer-options';
import { attendLayer } from './attend';
import type { BackendContext, DecoderBackend, KvView, PassRows } from './decoder-backend';
import { headName, layerPrefix } from './llama-weight-names';
import { LoraDeltas } from './lora-delta';
import { AdaptedLayers } from './native-f32-lora';
import { pickRows } from './pick-rows';

/** ortllm_f32's functions (native/src/f32-decoder.cc; argument checks there). */
export interface F32Addon {
  /** W [n, k] row-major packed for the calls below. */
  f32Pack(w: Float32Array, n: number, k: number): Float32Array;
  /** y[m, n] = x[m, k] W^T. */
  f32Gemm(packed: Float32Array, x: Float32Array, y: Float32Array, m: number, n: number, k: number): void;
  /** q, k, v = normed W^T, then RoPE on q and k at each row's position (none when positions is null). dims: [m, h, heads, kvHeads, headDim]. */
  f32Qkv(
    normed: Float32Array,
    wq: Float32Array,
    wk: Float32Array,
    wv: Float32Array,
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    positions: Int32Array | null,
    cos: Float32Array | null,
    sin: Float32Array | null,
    dims: Int32Array,
  ): void;
  /** The layer after attention: o_proj and residual, post norm, the SwiGLU MLP and residual, then `next` norm into normed. dims: [m, h, qDim, inter]. */
  f32Mlp(
    attn: Float32Array,
    wo: Float32Array,
    residual: Float32Array,
    post: Float32Array,
    wGateUp: Float32Array,
    wDown: Float32Array,
    next: Float32Array,
    normed: Float32Array,
    dims: Int32Array,
    eps: number,
  ): void;
  /** The kernels to run from now on ('portable' | 'avx2' | 'avx512'), clamped to this CPU's best; returns the level in force. For tests: every level gives the same floats. */
  f32SetSimd(level: F32Simd): F32Simd;
  /** The best kernels this CPU runs (what the size policy reads). */
  readonly simd: F32Simd;
}

/** ortllm_f32's kernel builds. */
export type F32Simd = 'portable' | 'avx2' | 'avx512';

const ADDON = 'native/build/Release/ortllm_f32.node';
let loaded: F32Addon | null | undefined;

/** The addon, or null when it is not built. */
export function f32Addon(): F32Addon | null {
  if (loaded === undefined) {
    const path = nativeAddonPath(ADDON);
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      loaded = path ? (require(path) as F32Addon) : null;
      if (loaded && (typeof loaded.f32Mlp !== 'function' || typeof loaded.f32SetSimd !== 'function')) loaded = null;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

export interface PackedLayer {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  o: Float32Array;
  gateUp: Float32Array;
  down: Float32Array;
  inputNorm: Float32Array;
  postNorm: Float32Array;
}

/** The backend over the addon the chooser found (f32Addon()), packing the weights as it reads them. */
export function createNativeF32(ctx: BackendContext, addon: F32Addon): DecoderBackend {
  return new SmallDecoder(ctx.config, ctx.weights, addon, ctx.native, ctx.decoder.layers, () => ctx.weights.releaseRead());
}

/** A pass's activation rows. */
export interface Activations {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  attn: Float32Array;
  normed: Float32Array;
}

class SmallDecoder implements DecoderBackend {
  readonly name = 'native-f32';
  readonly poolSpinMicros = 0;
  private readonly layers: PackedLayer[] = [];
  private readonly head: Float32Array;
  private readonly finalNorm: Float32Array;
  readonly qDim: number;
  readonly kvDim: number;
  readonly inter: number;
  readonly eps: number;
  private readonly qkvDims = new Int32Array(5);
  private readonly mlpDims = new Int32Array(4);
  /** Activation buffers of the last row count, kept across steps (a batch-1 decode reuses them every step). */
  private bufs: ({ rows: number } & Activations) | null = null;
  private store: Activations = { q: new Float32Array(0), k: new Float32Array(0), v: new Float32Array(0), attn: new Float32Array(0), normed: new Float32Array(0) };

  constructor(
    readonly config: ModelArchConfig,
    weights: ModelWeights,
    readonly addon: F32Addon,
    readonly native: NativeKernels,
    /** Every layer's options; f32Qkv applies one RoPE table to all (the chooser refuses per-layer RoPE). */
    private readonly options: readonly DecoderLayerOptions[],
    /** Called after each layer is packed (the runner releases the tensors it read). */
    afterLayer: () => void,
  ) {
    const c = config as ModelArchConfig & { intermediateSize: number; rmsNormEps: number; tieWordEmbeddings: boolean };
    const h = c.hiddenSize;
    this.qDim = c.numHeads * c.headDim;
    this.kvDim = c.numKvHeads * c.headDim;
    this.inter = c.intermediateSize;
    this.eps = c.rmsNormEps;
    const f32 = (name: string) => toF32(requireWeight(weights, name));
    const pack = (names: string[], n: number, k: number) => {
      const parts = names.map(f32);
      const w = concatArrays(parts, (n) => new Float32Array(n));
      if (w.length !== n * k) throw new Error(`${names.join(' + ')}: ${w.length} values, expected ${n} x ${k}`);
      return addon.f32Pack(w, n, k);
    };
    for (let l = 0; l < c.numLayers; l++) {
      const p = layerPrefix(l);
      this.layers.push({
        q: pack([`${p}self_attn.q_proj.weight`], this.qDim, h),
        k: pack([`${p}self_attn.k_proj.weight`], this.kvDim, h),
        v: pack([`${p}self_attn.v_proj.weight`], this.kvDim, h),
        o: pack([`${p}self_attn.o_proj.weight`], h, this.qDim),
        gateUp: pack([`${p}mlp.gate_proj.weight`, `${p}mlp.up_proj.weight`], 2 * this.inter, h),
        down: pack([`${p}mlp.down_proj.weight`], h, this.inter),
        inputNorm: f32(`${p}input_layernorm.weight`).slice(),
        postNorm: f32(`${p}post_attention_layernorm.weight`).slice(),
      });
      afterLayer();
    }
    this.finalNorm = f32('model.norm.weight').slice();
    this.head = pack([headName(c, weights)], c.vocabSize, h);
    afterLayer();
  }

  run(step: PassRows, residual: Float32Array, cache: KvView, logitsBuffer: (length: number) => Float32Array): Float32Array {
    const c = this.config;
    const n = step.rows;
    const h = c.hiddenSize;
    const b = this.buffers(n);
    const { addon, native } = this;
    this.qkvDims.set([n, h, c.numHeads, c.numKvHeads, c.headDim]);
    this.mlpDims.set([n, h, this.qDim, this.inter]);
    const rope = this.options[0]?.rope ?? null;
    native.addRmsNorm(null, residual, this.layers[0].inputNorm, b.normed, this.eps);
    // A pass with adapter rows runs each linear on its own, the adapters' products after it.
    const adapted = step.lora ? new AdaptedLayers(this, step, new LoraDeltas(step.lora, native), rope) : null;
    for (let l = 0; l < c.numLayers; l++) {
      const w = this.layers[l];
      const next = l === c.numLayers - 1 ? this.finalNorm : this.layers[l + 1].inputNorm;
      if (adapted) adapted.attentionInputs(l, w, b);
      else addon.f32Qkv(b.normed, w.q, w.k, w.v, b.q, b.k, b.v, rope ? step.positions : null, rope?.cos ?? null, rope?.sin ?? null, this.qkvDims);
      native.writeKv(b.k, b.v, cache.keys[l], cache.values[l], step.layerSlots[l], cache.kvCode);
      attendLayer(native, b.q, b.attn, cache, l, step, this.options[l].attention);
      if (adapted) adapted.afterAttention(l, w, b, residual, next);
      else addon.f32Mlp(b.attn, w.o, residual, w.postNorm, w.gateUp, w.down, next, b.normed, this.mlpDims, this.eps);
    }
    adapted?.free();
    const picked = pickRows(b.normed, step.logitsRows, h);
    const logits = logitsBuffer(step.logitsRows.length * c.vocabSize);
    addon.f32Gemm(this.head, picked, logits, step.logitsRows.length, c.vocabSize, h);
    native.free(residual);
    return logits;
  }

  release(): Promise<void> {
    return Promise.resolve();
  }

  private buffers(rows: number): { rows: number } & Activations {
    if (this.bufs?.rows === rows) return this.bufs;
    // Views of arrays kept at the largest row count so far: the kernels take exact lengths.
    const h = this.config.hiddenSize;
    if (this.store.normed.length < rows * h) {
      this.store = {
        q: new Float32Array(rows * this.qDim),
        k: new Float32Array(rows * this.kvDim),
        v: new Float32Array(rows * this.kvDim),
        attn: new Float32Array(rows * this.qDim),
        normed: new Float32Array(rows * h),
      };
    }
    const view = (a: Float32Array, width: number) => a.subarray(0, rows * width);
    const s = this.store;
    this.bufs = {
      rows,
      q: view(s.q, this.qDim),
      k: view(s.k, this.kvDim),
      v: view(s.v, this.kvDim),
      attn: view(s.attn, this.qDim),
      normed: view(s.normed, h),
    };
    return this.bufs;
  }
}
