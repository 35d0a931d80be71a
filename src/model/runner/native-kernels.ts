// Loads ortllm_native (native/src/addon.cc registers its kernels: paged attention, the KV cache
// writer, Q8_0 / bfloat16 GEMMs, norms, argmax), built at install time by scripts/build-native.js.
// Optional: when it is missing (no compiler at install, another platform) the runner falls back to
// the in-graph attention and says why once.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { KvArray } from './kv-cache';

/** The addon's interface (argument checks live in the C++ code; it throws TypeError on bad input). */
export interface NativeKernels {
  /**
   * Causal attention of packed query rows over each sequence's cache blocks; writes `out`. Optional:
   * `window` > 0, a query at position p sees keys max(0, p - window + 1) .. p (0: all); `softcap` > 0,
   * each scaled score s becomes softcap * tanh(s / softcap) before the softmax; `sinks` [numHeads],
   * one logit per query head added to its softmax's denominator (it carries no value).
   */
  attention(
    q: Float32Array,
    out: Float32Array,
    kCache: KvArray,
    vCache: KvArray,
    /**
     * Per sequence: first row, row count, past length, offset of its block table in `tables`. Rows
     * attended one by one come as entries of one row sharing the table offset; they count as one
     * sequence where the kernel splits a batch.
     */
    seqs: Int32Array,
    tables: Int32Array,
    /** [numHeads, numKvHeads, headDim, blockSize, kvType] (kvType: KV_STORAGE's nativeCode). */
    dims: Int32Array,
    scale: number,
    /** Sliding window: a query at position p sees positions max(0, p - window + 1) .. p (0: all). */
    window?: number,
    /** > 0: softcap * tanh(score / softcap) on each scaled score (0: none). */
    softcap?: number,
    /** [numHeads] one learned logit per query head added to the softmax denominator (no value), or null. */
    sinks?: Float32Array | null,
  ): void;
  /** Writes rows i of newK/newV ([n, kvDim] float32) into cache rows slots[i], narrowing to kvType. */
  writeKv(newK: Float32Array, newV: Float32Array, kCache: KvArray, vCache: KvArray, slots: Int32Array, kvType: number): void;
  /** Frees the memory of each typed array's buffer now (detaches it): the caller holds no other view of them. */
  free(...arrays: ArrayBufferView[]): void;
  /**
   * Index (from `offset`) of the largest of values[offset .. offset + count), first on ties, NaN
   * never chosen unless first (native/src/argmax.cc: the greedy sampler's argmax, in AVX2).
   */
  argmax(values: Float32Array, offset: number, count: number): number;
  /**
   * Threads attention and the addon's other kernels may use (the caller plus n - 1 helpers), and
   * how long (µs, default 0) helpers and caller spin between calls before they sleep: worth it only
   * where a step is all addon calls (native/src/thread-pool.cc).
   */
  setThreads(n: number, spinMicros?: number): void;
  /** True when the CPU runs the AVX2/FMA/F16C kernel (else the portable one). */
  readonly simd: boolean;
  /**
   * The kernel attention runs: 'portable', 'avx2', 'avx512' (AVX-512 F/BW/DQ/VL) or 'avx512bf16'
   * (also AVX512-BF16 and VBMI: bfloat16 dot products for bfloat16 and 8-bit caches' decodes), at
   * most the best this CPU has, which is the default; returns the one now in use. For tests and benchmarks.
   */
  setSimd(level: SimdLevel): SimdLevel;
  /** True when q8Gemm and siluMul run here (AVX512-VNNI, or AVX2 + FMA + F16C). */
  readonly q8Available: boolean;
  /** A Q8_0 weight [n, k] (codes q + 128 row-major, one scale per 32 codes) packed for q8Gemm (one layout for both kernels). */
  q8Pack(codes: Uint8Array, scales: Float32Array, n: number, k: number): Uint8Array;
  /**
   * y[m, n] = x[m, k] W^T with x quantized per row and 32-block to int8 (native/src/q8-gemm.cc): on
   * the best kernel this CPU has, or the one named (tests, benches: 'avx2' on a VNNI CPU); both
   * give the same bits. Throws without either instruction set.
   */
  q8Gemm(packed: Uint8Array, x: Float32Array, y: Float32Array, m: number, n: number, k: number, kernel?: Q8Kernel): void;
  /**
   * A LoRA pair's product added into a linear's output over `rows` (native/src/lora-add.cc):
   * y[row * yStride + yOffset + j] += sum_r (x[row] . a[r]) * B[j, r], a [rank, in] row-major, bp
   * B (scaled) as lora-delta.ts's loraPackedB packs it, x [·, in]; dims [in, out, rank, yStride, yOffset].
   * Spread over the pool; each output's sums run in one order whatever the rows and threads, so a
   * row's result does not depend on its batch. `simd` picks a lower build (tests). Optional: older builds lack it.
   */
  loraAdd?(a: Float32Array, bp: Float32Array, x: Float32Array, y: Float32Array, rows: Int32Array, dims: Int32Array, simd?: 'portable' | 'avx2' | 'avx512'): void;
  /**
   * loraAdd for several slots of one linear in one pass over the pool: `as[s]`, `bps[s]` slot s's
   * pair, `rows` every slot's rows one slot after another, dims [in, out, yStride, yOffset, then
   * rank and row count per slot]. Each output's sums are loraAdd's. Optional: older builds lack it.
   */
  loraAddSlots?(as: Float32Array[], bps: Float32Array[], x: Float32Array, y: Float32Array, rows: Int32Array, dims: Int32Array, simd?: 'portable' | 'avx2' | 'avx512'): void;
  /** out[r, j] = silu(gu[r, j]) * gu[r, width + j] (SwiGLU of a [rows, 2 * width] gate_up output); where q8Available, kernel as q8Gemm's. */
  siluMul(gu: Float32Array, out: Float32Array, width: number, kernel?: Q8Kernel): void;
  /** out[r, j] = gelu_tanh(gu[r, j]) * gu[r, width + j] (gemma's GeGLU), as siluMul. */
  geluTanhMul(gu: Float32Array, out: Float32Array, width: number, kernel?: Q8Kernel): void;
  /**
   * In place: each head of each row rotated as RotaryEmbedding (interleaved 0) with that row's
   * cos/sin ([rows, rotaryDim / 2]); only each head's first rotaryDim values (default all) rotate.
   */
  rope(x: Float32Array, cos: Float32Array, sin: Float32Array, heads: number, headDim: number, rotaryDim?: number): void;
  /**
   * residual += x in place (x null: no add), then out = residual / sqrt(mean(residual^2) + eps) * weight
   * per row of weight's width (native/src/rms-norm.cc; any CPU). out must not overlap x or residual.
   */
  addRmsNorm(x: Float32Array | null, residual: Float32Array, weight: Float32Array, out: Float32Array, eps: number): void;
  /** True when bf16Gemm and addLayerNorm run here (AVX512-BF16). */
  readonly bf16Available: boolean;
  /** A float32 weight [n, k] (row-major) rounded to bfloat16 (nearest even) and packed for bf16Gemm. */
  bf16Pack(w: Float32Array, n: number, k: number): Uint16Array;
  /**
   * y[m, n] = act(x[m, k] W^T + bias) with x rounded to bfloat16 and float32 sums (native/src/bf16-gemm.cc);
   * act: BF16_ACTIVATION's codes. Throws without AVX512-BF16.
   */
  bf16Gemm(packed: Uint16Array, x: Float32Array, bias: Float32Array | null, y: Float32Array, m: number, n: number, k: number, act: number): void;
  /** out = LayerNorm(x + residual) * gamma + beta per row of gamma's width (out may be x or residual); AVX512-BF16 CPUs only. */
  addLayerNorm(x: Float32Array, residual: Float32Array, gamma: Float32Array, beta: Float32Array, out: Float32Array, eps: number): void;
  /**
   * Bidirectional self-attention of padded sequences (native/src/bf16-encoder-attention.cc): qkv [B*S, 3H]
   * (q, k, v side by side), sequence b's positions 0..lengths[b]-1 real; writes context [B*S, H] (padded
   * rows zero). Q, K, V and the probabilities rounded to bfloat16, float32 sums and softmax; AVX512-BF16 CPUs only.
   */
  bf16EncoderAttention(qkv: Float32Array, lengths: Int32Array, context: Float32Array, seq: number, heads: number, scale: number): void;
}

/** q8Gemm's kernels (native/src/q8-gemm.cc, q8-gemm-avx2.inc). */
export type Q8Kernel = 'avx2' | 'avx512vnni';

/** The attention kernel's builds, lowest first (native/src/cpu-features.h's SimdLevel). */
export const SIMD_LEVELS = ['portable', 'avx2', 'avx512', 'avx512bf16'] as const;
export type SimdLevel = (typeof SIMD_LEVELS)[number];

/** bf16Gemm's activation codes (native/src/bf16-gemm.cc's Activation). */
export const BF16_ACTIVATION = { none: 0, gelu: 1, gelu_tanh: 2, relu: 3 } as const;

const ADDON = join('native', 'build', 'Release', 'ortllm_native.node');
const ADDON_FUNCTIONS = ['attention', 'writeKv', 'free', 'argmax', 'setThreads', 'setSimd', 'addRmsNorm'] as const;
let loaded: { addon: NativeKernels | null; reason: string } | null = null;

/** Where a built addon of native/ is (walks up from here: src/ under ts-jest, dist/src/ when built); null when not built. */
export function nativeAddonPath(file: string): string | null {
  for (let dir = __dirname, i = 0; i < 6; i++, dir = dirname(dir)) {
    if (existsSync(join(dir, file))) return join(dir, file);
  }
  return null;
}

function load(): { addon: NativeKernels | null; reason: string } {
  const path = nativeAddonPath(ADDON);
  if (!path) return { addon: null, reason: `${ADDON} is not built (npm install builds it with node-gyp; run \`node scripts/build-native.js\` to see why it failed)` };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const addon = require(path) as NativeKernels;
    const missing = ADDON_FUNCTIONS.filter((name) => typeof addon[name] !== 'function');
    // A build from an older checkout: rebuilt, it has them.
    if (missing.length > 0) return { addon: null, reason: `${path} is out of date (no ${missing.join(', ')}): run \`node scripts/build-native.js\`` };
    return { addon, reason: '' };
  } catch (err) {
    return { addon: null, reason: `${path} did not load: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** The addon, or null (see nativeKernelsUnavailable for why). */
export function nativeKernels(): NativeKernels | null {
  loaded ??= load();
  return loaded.addon;
}

export function nativeKernelsUnavailable(): string {
  loaded ??= load();
  return loaded.reason;
}
