// A small float32 llama/qwen2 decoder run wholly in the addons: each layer's linears, RoPE, SwiGLU
// and RMSNorms in two calls of ortllm_f32 (native/src/f32-decoder.cc), with the attention addon's
// writeKv and attention between them, and no onnxruntime session. The segmented runner takes this
// path (segmented-runner.ts) for float32 models of hidden size up to smallDecoderMaxHidden: 128 on
// AVX-512 and on AVX2 + FMA CPUs, none where the addon has only its portable loops.
//
// Why (issue 16): at stories260K's size (dim 64, 5 layers, vocab 512) a step's arithmetic is a few
// microseconds, and the step was per-call cost. perf of a batch-1 decode at context 128 (runner
// alone, ~145-170 us a step): onnxruntime's six session runs 71% (the binding reading each input's
// fields by name, ORT's allocations without an arena, each output copied into a new buffer:
// session.ts), the attention and K/V-write calls between them 13%, the rest (packing, tensors, GC)
// ~15%. After (before the head-size-8 attention kernel): a ~35-46 us step, the attention kernel
// 25%, the GEMMs 27% (the ~1 MB of float32 weights stream from L2 each step), N-API's typed-array
// argument checks ~10%, allocation ~5%; at batch 32 (~0.45-0.65 ms) attention 54%, the GEMMs 14%.
//
// Runner alone, `node dist/bench/forward.js --models stories260K --contexts 128 --batches 1,32
// --seconds 3`, main -> this path, two rounds interleaved under the bench lock (steps/s; CPU ms a
// step): batch 1 6,115 / 7,107 -> 27,668 / 28,843 (0.15 -> 0.03-0.04), batch 32 1,185 / 1,167 ->
// 2,293 / 2,172 (0.85 -> 0.47-0.54), prefill of 128 693 / 763 -> 1,034 / 1,022 (1.62 -> 0.98).
// bench/engine-overhead --model stories260K (engine ms a step / the runner inside it): batch 1
// 0.178 / 0.153 -> 0.062 / 0.038, batch 32 1.18 / 0.99 -> 0.59 / 0.44 (one round on a loaded machine).
// Served, `node dist/bench/serve.js --models stories --prompts short --concurrency 1,32 --max-tokens
// 64|128 --repeat 2 --peer llama-server ...`, main and this build alternating on a quiet machine
// (output tok/s; llama-server's figure of the same run in brackets):
//   64 tokens,  1 stream   3,840 / 4,279 / 3,104 [3,475-3,575]  ->  8,518 / 7,011 / 7,204 [3,657-4,003]
//               32 streams 27,105 / 32,052 / 25,167            ->  38,772 / 44,567 / 39,585
//   128 tokens, 1 stream   5,143 / 5,563 [3,345-3,810]         ->  12,595 / 10,480 [3,731-3,953]
//               32 streams 27,998 / 33,696                      ->  42,313 / 52,300
// and one more round under the bench lock with other sessions' builds loading the machine: 64
// tokens 2,700 -> 7,365 [2,899] at 1 stream, 18,552 -> 35,858 [5,030] at 32; 128 tokens 5,072 ->
// 11,827 [2,785] and 24,707 -> 45,789 [4,869].
// Against main with the head-size-8 attention kernel (native/src/attend-hd8.inc), under the bench
// lock, two rounds: runner alone batch 1 7,036 / 7,451 -> 30,504 / 31,176 steps/s, batch 32 1,455 /
// 1,990 -> 3,255 / 3,329, prefill of 128 925 / 1,044 -> 1,500 / 1,584; served 64 tokens, 1 stream
// 4,400 / 4,485 [4,239 / 4,317] -> 10,985 / 8,323 [3,951 / 4,290], 32 streams 27,152 / 32,266 ->
// 54,517 / 42,497; 128 tokens 5,336 / 4,125 -> 7,577 / 10,592 and 35,106 / 20,839 -> 30,608 /
// 39,397 (a loaded round: llama-server's 32 streams fell to 1,121 tok/s in one of its runs).
// TPOT p50 at 1 stream 0.16-0.31 -> 0.05-0.11 ms (the runner's batch-1 step 0.03-0.04). One stream is
// now bound by what each token costs around the step (the engine core's ~20 us, the step
// message, the HTTP thread's SSE chunk and the client, on two cores), not by the runner.
//
// The size policy, measured: random llama-shaped float32 models (5 layers, intermediate 8/3 x
// hidden, vocab 2048, head size 32), this path against onnxruntime segments in one process, two
// rounds on a quiet machine (us wall / CPU per step; batch-1 and batch-32 decode at context 128,
// prefill of 128):
//   hidden  64   b1  42-43 / 41-42 vs 155-203 / 165-174   b32  477-491 vs 628-979      prefill 503-620 vs 782-925
//   hidden 128   b1  86-97 / 87-92 vs 240-257 / 241-252   b32  984-1492 vs 1726-2677   prefill 1607-1783 vs 1873-2170
//   hidden 192   b1 388-836 / 384-578 vs 359-383 / 356-431  b32 3381-3450 vs 3327-3697  prefill 3789-3912 vs 2581-3748
//   hidden 256   b1 519-674 vs 571-701                      b32 3541-4846 vs 5002-5100  prefill 4095-5469 vs 5566-6021
// From 192 the weights no longer sit in the cache and this path's one thread streams them from
// memory, where onnxruntime's GEMMs use every core: it stops paying at batch 1 first. So 128.
// Not taken: each layer's weights as one Float32Array argument (seven fewer typed arrays for N-API
// to check a layer, whose checks perf put at ~10% of the batch-1 step) with the embedded rows
// written into a kept buffer: runner alone, batch 1, before / after in three alternating rounds
// under the bench lock 26,575 / 28,037 / 26,879 against 28,799 / 27,495 / 24,941 steps/s, batch
// 32 1,996 / 2,029 / 2,112 against 2,125 / 2,027 / 1,904: within the noise.
// The addon pool (attention) does not spin between calls on this path, as it does on the Q8_0 one:
// stories260K batch 32, 2 threads, spin 100 us against none 330-450 / 447-649 against 414-462 /
// 464-547 us wall / CPU a step, and a served 32-stream step shares the two cores with the HTTP
// thread and the client, where the CPU counts.
//
// AVX2 + FMA CPUs (Zen 1, 2 cores; f32-decoder.cc's AVX2 kernels, the same floats as AVX-512's).
// Runner alone, `node dist/bench/forward.js --models stories260K --contexts 128 --batches 1,32
// --seconds 3` against `--small-decoder off`, two rounds under the bench lock, the second with
// onnxruntime first (load 3.6-4.3 from other sessions; steps/s, CPU ms a step in brackets):
//   batch 1          1,180 / 1,171 (0.80 / 0.75)  ->  8,866 / 8,231 (0.11 / 0.11)
//   batch 32           289 / 277   (3.68 / 3.70)  ->    412 / 416   (2.42 / 2.39)
//   prefill of 128     174 / 167   (6.43 / 6.26)  ->    218 / 213   (4.56 / 4.56)
// Two more rounds the same way with attend-hd8-avx2.inc in the build (load 2-3): batch 1 1,615 /
// 1,520 -> 10,513 / 10,460 (CPU ms 0.63 / 0.67 -> 0.10 / 0.10), batch 32 402 / 425 -> 602 / 619
// (3.56 / 3.37 -> 2.24 / 2.17), prefill of 128 231 / 227 -> 263 / 270 (6.63 / 6.58 -> 4.72 / 4.58).
// Served, `node dist/bench/serve.js --models stories --prompts short --concurrency 1,32
// --max-tokens 64 --repeat 1 --peer llama-server ...`, this path switched off in dist (the AVX2
// limit set to 0) and on, two alternating rounds under the bench lock, load 1.5-2.2 (output
// tok/s, llama-server's of the same run in brackets): 1 stream 859 / 883 [1,591 / 1,650] ->
// 2,536 / 2,458 [1,568 / 1,592], TPOT p50 1.02 / 0.99 -> 0.28 / 0.31 ms; 32 streams 5,281 /
// 5,217 [2,336 / 2,572] -> 6,694 / 5,842 [2,248 / 2,468], but TTFT p50 83 / 104 -> 159 / 191 ms:
// 32 prompts arrive together and this path's GEMMs run on one thread where onnxruntime's used
// both cores (left: a prefill of many rows split over the addon pool).
// Where a step goes on this path (timers around each addon call, 300 steps after 20, under the
// bench lock): batch 32 attention 54%, f32Mlp 24%, f32Qkv 5%, head 4%, writeKv 2%; batch 1
// attention 37%, f32Mlp 12%, writeKv 6%, f32Qkv 5%; prefill of 128 f32Mlp 43%, attention 39%,
// f32Qkv 8%. The attention addon ran head size 8 in its general AVX2 kernel on this CPU
// (attend-hd8.inc is AVX-512 only): `node dist/bench/attention-kernel.js --shapes stories260K
// --contexts 128,1024 --threads 1`, batch 32, float32 KV, 1.26 CPU ms a step at context 128; its
// decodes now take native/src/attend-hd8-avx2.inc (figures there: 12-22% off the kernel; in the
// runner +10-13% at context 1024, within the noise at 128).
// The size policy on AVX2, the random models above (`--models f32-h64,f32-h128,f32-h192
// --contexts 128 --batches 1,32 --seconds 2`, the limit lifted for the run), the same two rounds
// (steps/s, onnxruntime segments -> this path):
//   hidden  64   b1 1,205 / 1,181 -> 5,356 / 10,481   b32 259 / 300 -> 336 / 449   prefill 163 / 193 -> 191 / 288
//   hidden 128   b1   701 / 605   -> 2,081 / 2,134    b32 175 / 173 -> 180 / 184   prefill 104 / 102 ->  97 / 96
//   hidden 192   b1   496 / 408   ->   818 / 694      b32  97 / 91  ->  93 / 92    prefill  58 / 55  ->  42 / 42
// Batch 1 still wins at 192 (the 2 cores' onnxruntime threads gain less than the session runs
// cost), but batch 32 is even there and the prefill 25% slower (this path's GEMMs run on one
// thread, onnxruntime's on both cores). So 128 on AVX2 as on AVX-512: at 128 batch 1 runs 3x
// faster, batch 32 evenly, the prefill 6% slower.
import type { ModelArchConfig, ModelWeights } from '../types';
import { concatArrays, requireWeight, toF32 } from '../graph/weights';
import type { NativeAttention } from './native-attention';
import { nativeAddonPath } from './native-attention';

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

/** The widest hidden size this path takes on AVX-512 CPUs: the header's table. */
export const SMALL_DECODER_MAX_HIDDEN = 128;

/** The widest hidden size this path takes with the addon's kernels (0: none, the portable loops never pay): the header's tables. */
export function smallDecoderMaxHidden(addon: F32Addon | null): number {
  if (addon?.simd === 'avx512') return SMALL_DECODER_MAX_HIDDEN;
  if (addon?.simd === 'avx2') return SMALL_DECODER_MAX_HIDDEN_AVX2;
  return 0;
}

/** The widest hidden size this path takes on AVX2 + FMA CPUs (Zen 1 measured): the header's AVX2 table. */
export const SMALL_DECODER_MAX_HIDDEN_AVX2 = 128;

const prefix = (l: number) => `model.layers.${l}.`;

const LINEARS = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'];

function headName(c: ModelArchConfig & { tieWordEmbeddings: boolean }, weights: ModelWeights): string {
  return !c.tieWordEmbeddings && weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
}

/** True when `config` with these weights runs on this path (float32 weights, no QKV bias, within the size policy). */
export function smallDecoderApplies(config: ModelArchConfig, weights: ModelWeights, addon: F32Addon | null): boolean {
  const c = config as ModelArchConfig & { attentionBias?: boolean; tieWordEmbeddings?: boolean; intermediateSize?: number };
  if (c.attentionBias || c.intermediateSize === undefined || c.hiddenSize > smallDecoderMaxHidden(addon)) return false;
  const names = [headName(c as ModelArchConfig & { tieWordEmbeddings: boolean }, weights), 'model.norm.weight'];
  for (let l = 0; l < c.numLayers; l++) names.push(...LINEARS.map((n) => `${prefix(l)}${n}.weight`));
  return names.every((name) => weights.has(name) && weights.get(name).kind === 'f32');
}

interface PackedLayer {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  o: Float32Array;
  gateUp: Float32Array;
  down: Float32Array;
  inputNorm: Float32Array;
  postNorm: Float32Array;
}

/** What a pass needs of the runner's packed step (segmented-runner.ts's PackedStep). */
export interface SmallDecoderStep {
  rows: number;
  positions: Int32Array;
  slots: Int32Array;
  seqInfo: Int32Array;
  tables: Int32Array;
  logitsRows: BigInt64Array;
}

/** Where the pass writes the cache: the runner's arrays and dims (segmented-runner.ts). */
export interface SmallDecoderCache {
  keys: readonly (Float32Array | Uint16Array | Uint8Array)[];
  values: readonly (Float32Array | Uint16Array | Uint8Array)[];
  kvCode: number;
  dims: Int32Array;
  scale: number;
}

/** A pass's activation rows. */
interface Activations {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  attn: Float32Array;
  normed: Float32Array;
}

export class SmallDecoder {
  private readonly layers: PackedLayer[] = [];
  private readonly head: Float32Array;
  private readonly finalNorm: Float32Array;
  private readonly qDim: number;
  private readonly kvDim: number;
  private readonly inter: number;
  private readonly eps: number;
  private readonly qkvDims = new Int32Array(5);
  private readonly mlpDims = new Int32Array(4);
  /** Activation buffers of the last row count, kept across steps (a batch-1 decode reuses them every step). */
  private bufs: ({ rows: number } & Activations) | null = null;
  private capacity = 0;
  private store: Activations = { q: new Float32Array(0), k: new Float32Array(0), v: new Float32Array(0), attn: new Float32Array(0), normed: new Float32Array(0) };

  constructor(
    private readonly config: ModelArchConfig,
    weights: ModelWeights,
    private readonly addon: F32Addon,
    private readonly native: NativeAttention,
    private readonly rope: { cos: Float32Array; sin: Float32Array } | null,
    /** Called after each layer is packed (the runner releases the tensors it read). */
    afterLayer: () => void = () => {},
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
      const p = prefix(l);
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

  /** Runs the layers over the step's embedded rows (`residual`, consumed) and writes the head's [picked rows, vocab] into `logits`. */
  run(step: SmallDecoderStep, residual: Float32Array, cache: SmallDecoderCache, logits: Float32Array): void {
    const c = this.config;
    const n = step.rows;
    const h = c.hiddenSize;
    const b = this.buffers(n);
    const { addon, native } = this;
    this.qkvDims.set([n, h, c.numHeads, c.numKvHeads, c.headDim]);
    this.mlpDims.set([n, h, this.qDim, this.inter]);
    const rope = this.rope;
    native.addRmsNorm(null, residual, this.layers[0].inputNorm, b.normed, this.eps);
    for (let l = 0; l < c.numLayers; l++) {
      const w = this.layers[l];
      addon.f32Qkv(b.normed, w.q, w.k, w.v, b.q, b.k, b.v, rope ? step.positions : null, rope?.cos ?? null, rope?.sin ?? null, this.qkvDims);
      native.writeKv(b.k, b.v, cache.keys[l], cache.values[l], step.slots, cache.kvCode);
      native.attention(b.q, b.attn, cache.keys[l], cache.values[l], step.seqInfo, step.tables, cache.dims, cache.scale);
      const next = l === c.numLayers - 1 ? this.finalNorm : this.layers[l + 1].inputNorm;
      addon.f32Mlp(b.attn, w.o, residual, w.postNorm, w.gateUp, w.down, next, b.normed, this.mlpDims, this.eps);
    }
    const picked = pickRows(b.normed, step.logitsRows, h);
    addon.f32Gemm(this.head, picked, logits, step.logitsRows.length, c.vocabSize, h);
  }

  private buffers(rows: number): { rows: number } & Activations {
    if (this.bufs?.rows === rows) return this.bufs;
    // Views of arrays kept at the largest row count so far: the kernels take exact lengths.
    if (this.capacity < rows) {
      const h = this.config.hiddenSize;
      this.capacity = rows;
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
      normed: view(s.normed, this.config.hiddenSize),
    };
    return this.bufs;
  }
}

/** Rows `picked` of `rows` ([*, width]) as one array: `rows` itself when every row is picked (they are picked in order). */
export function pickRows(rows: Float32Array, picked: BigInt64Array, width: number): Float32Array {
  if (picked.length * width === rows.length) return rows;
  const out = new Float32Array(picked.length * width);
  picked.forEach((r, i) => out.set(rows.subarray(Number(r) * width, (Number(r) + 1) * width), i * width));
  return out;
}
