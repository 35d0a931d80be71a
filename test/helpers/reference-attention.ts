// The native paged-attention kernel's tests share these: seeded inputs, the KV cache storages with
// encoders written independently of the kernel, and a plain float64 reference of paged causal
// attention with the optional sliding window, logit soft-cap and sinks.
import { f16ToF32, f32ToF16 } from '../../src/model/gguf/half';
import type { KvArray } from '../../src/model/runner/kv-cache';
import { nativeKernels, type NativeKernels } from '../../src/model/runner/native-kernels';
import { FP8_FORMATS } from './fp8';

const word = new Uint32Array(1);
const float = new Float32Array(word.buffer);
function bf16ToF32(h: number): number {
  word[0] = h << 16;
  return float[0];
}
function f32ToBf16(f: number): number {
  float[0] = f;
  const x = word[0];
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * The addon for a describe block's tests (call inside it): loaded before them, and its threads and
 * SIMD level (which tests change) reset to one thread and the best level after them.
 */
export function useNativeAttention(): () => NativeKernels {
  let native: NativeKernels;
  beforeAll(() => {
    native = nativeKernels()!;
    expect(native).not.toBeNull();
  });
  afterAll(() => {
    native.setThreads(1);
    native.setSimd('avx512bf16');
  });
  return () => native;
}

/** n values in [-1, 1) from a linear congruential generator. */
export function seeded(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

export interface AttentionCase {
  heads: number;
  kvHeads: number;
  headDim: number;
  blockSize: number;
}

/** The kernel's optional arguments (NativeKernels.attention's window, softcap, sinks). */
export interface AttentionFeatures {
  window?: number;
  softcap?: number;
  sinks?: Float32Array | null;
}

export interface KvStorage {
  name: string;
  /** The kernel's type code (KV_STORAGE's nativeCode). */
  code: number;
  encode: (a: Float32Array) => KvArray;
  decode: (a: KvArray) => ArrayLike<number>;
  isNan: (code: number) => boolean;
}

/** Every KV cache storage the kernel reads. The fp8 ones are checked against the reference of their decoded (rounded) values. */
export const KV_STORAGES: KvStorage[] = [
  { name: 'float32', code: 0, encode: (a) => a, decode: (a) => a, isNan: () => false },
  { name: 'half', code: 1, encode: (a) => Uint16Array.from(a, f32ToF16), decode: (a) => Float32Array.from(a, f16ToF32), isNan: (h) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0 },
  { name: 'bfloat16', code: 2, encode: (a) => Uint16Array.from(a, f32ToBf16), decode: (a) => Float32Array.from(a, bf16ToF32), isNan: (h) => (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0 },
  ...FP8_FORMATS.map((f) => ({ name: f.name, code: f.code, encode: (a: Float32Array) => Uint8Array.from(a, f.encode), decode: (a: KvArray) => Float32Array.from(a, f.decode), isNan: (b: number) => Number.isNaN(f.decode(b)) })),
];

/**
 * softmax(q k^T * scale) v per sequence, head and row, causal over past + own rows, float64. With a
 * window, row position p sees keys max(0, p - window + 1) .. p; a soft-cap maps each scaled score s
 * to cap * tanh(s / cap); a sink logit per query head joins the softmax's denominator only.
 */
export function referenceAttention(
  c: AttentionCase,
  q: Float32Array,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  seqs: number[],
  tables: number[],
  features: AttentionFeatures = {},
): Float32Array {
  const out = new Float32Array(q.length);
  const group = c.heads / c.kvHeads;
  const kvStride = c.kvHeads * c.headDim;
  const qStride = c.heads * c.headDim;
  const scale = 1 / Math.sqrt(c.headDim);
  const { window = 0, softcap = 0, sinks = null } = features;
  for (let s = 0; s < seqs.length / 4; s++) {
    const [first, count, past, tableAt] = seqs.slice(4 * s, 4 * s + 4);
    const row = (pos: number) => tables[tableAt + Math.floor(pos / c.blockSize)] * c.blockSize + (pos % c.blockSize);
    for (let r = 0; r < count; r++) {
      const pos = past + r;
      const from = window > 0 ? Math.max(0, pos - window + 1) : 0;
      const n = pos + 1 - from;
      const at = Array.from({ length: n }, (_, j) => row(from + j));
      for (let h = 0; h < c.heads; h++) {
        const kvh = Math.floor(h / group);
        const w = new Float64Array(n);
        const qAt = (first + r) * qStride + h * c.headDim;
        for (let j = 0; j < n; j++) {
          let dot = 0;
          for (let d = 0; d < c.headDim; d++) dot += q[qAt + d] * k[at[j] * kvStride + kvh * c.headDim + d];
          w[j] = softcap > 0 ? softcap * Math.tanh((dot * scale) / softcap) : dot * scale;
        }
        const sink = sinks ? sinks[h] : -Infinity;
        const max = w.reduce((a, b) => Math.max(a, b), sink);
        let sum = Math.exp(sink - max);
        for (let j = 0; j < n; j++) sum += w[j] = Math.exp(w[j] - max);
        const acc = new Float64Array(c.headDim);
        for (let j = 0; j < n; j++) for (let d = 0; d < c.headDim; d++) acc[d] += w[j] * v[at[j] * kvStride + kvh * c.headDim + d];
        for (let d = 0; d < c.headDim; d++) out[qAt + d] = acc[d] / sum;
      }
    }
  }
  return out;
}

/** K and V caches of numBlocks blocks of seeded values in `st`'s storage (seeds `seed` and `seed` + 1). */
export function seededCaches(c: AttentionCase, st: KvStorage, numBlocks: number, seed = 1): { k: KvArray; v: KvArray } {
  const elements = numBlocks * c.blockSize * c.kvHeads * c.headDim;
  return { k: st.encode(seeded(elements, seed)), v: st.encode(seeded(elements, seed + 1)) };
}

/** A seqs/tables pair for sequences of {count, past} in scattered blocks of a cache of numBlocks. */
export function scatteredSequences(shapes: Array<{ count: number; past: number }>, blockSize: number, numBlocks: number): { seqs: number[]; tables: number[]; rows: number } {
  const seqs: number[] = [];
  const tables: number[] = [];
  let rows = 0;
  let next = 0;
  for (const { count, past } of shapes) {
    const blocks = Math.ceil((past + count) / blockSize);
    seqs.push(rows, count, past, tables.length);
    for (let b = 0; b < blocks; b++) tables.push((next++ * 7 + 3) % numBlocks);
    rows += count;
  }
  return { seqs, tables, rows };
}
