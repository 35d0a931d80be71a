// What the runner stores its paged KV cache in. One entry per storage type the runner can
// hold; `--kv-cache-dtype` names them, and 'auto' is the model's own data type (as in vLLM),
// resolved per model by resolveKvCacheDtype (runner/index.ts).
//
// float16 and bfloat16 halve the bytes attention reads per past token (and the cache's memory:
// a byte budget holds twice the blocks); values are rounded when written and widened back to
// float32 (exactly) when read. Only the native attention kernel reads them (runner/native-kernels.ts).
//
// float16 is the default for GGUF files ('auto'), as in llama.cpp. fp8_e4m3 / fp8_e5m2 (vLLM's 8-bit
// caches) quarter float32's bytes at a cost in accuracy (test/unit/model/native-attention-fp8.test.ts).
// Figures: docs/perf/kv-cache.md.
// They are opt-in: 'auto' never picks them, as in vLLM.

export type KvStorageDtype = 'float32' | 'float16' | 'bfloat16' | 'fp8_e4m3' | 'fp8_e5m2';

/**
 * `--kv-cache-dtype`: a storage type, 'auto' = the model's data type, or 'fp8' = fp8_e4m3 (vLLM's
 * meaning on CUDA: its cache kernels take "fp8" and "fp8_e4m3" alike as E4M3).
 */
export type KvCacheDtypeFlag = 'auto' | 'fp8' | KvStorageDtype;

/** What `fp8` stores. */
export const FP8_KV_DTYPE: KvStorageDtype = 'fp8_e4m3';

export interface KvStorage {
  bytesPerElement: number;
  /** The element type code of the native kernel (0 float32, 1 IEEE half, 2 bfloat16, 3 E4M3FN, 4 E5M2). */
  nativeCode: number;
  /** A cache array of `n` elements (8-bit floats as their bytes, 16-bit ones as their bits), in shared memory when `shared`. */
  allocate(n: number, shared?: boolean): Float32Array | Uint16Array | Uint8Array;
}

/** Zeroed memory of `bytes` bytes, shareable with other threads when `shared`. */
function backing(bytes: number, shared = false): ArrayBuffer | SharedArrayBuffer {
  return shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
}

export const KV_STORAGE: Record<KvStorageDtype, KvStorage> = {
  float32: { bytesPerElement: 4, nativeCode: 0, allocate: (n, shared) => new Float32Array(backing(n * 4, shared)) },
  float16: { bytesPerElement: 2, nativeCode: 1, allocate: (n, shared) => new Uint16Array(backing(n * 2, shared)) },
  bfloat16: { bytesPerElement: 2, nativeCode: 2, allocate: (n, shared) => new Uint16Array(backing(n * 2, shared)) },
  // OCP 8-bit floats, as vLLM's fp8 caches with their default per-layer scales of 1.0 (no
  // checkpoint scales are read): values are rounded to nearest even when written, magnitudes
  // past the largest finite (448 / 57344) saturate to it, NaN stays NaN (__NV_SATFINITE).
  fp8_e4m3: { bytesPerElement: 1, nativeCode: 3, allocate: (n, shared) => new Uint8Array(backing(n, shared)) },
  fp8_e5m2: { bytesPerElement: 1, nativeCode: 4, allocate: (n, shared) => new Uint8Array(backing(n, shared)) },
};

export const isKvStorageDtype = (text: string): text is KvStorageDtype => Object.hasOwn(KV_STORAGE, text);

/** Hugging Face config.json dtype names (torch_dtype, or dtype since transformers 4.56) → storage. */
const HF_DTYPES: Readonly<Record<string, KvStorageDtype>> = {
  float32: 'float32',
  float: 'float32',
  float16: 'float16',
  half: 'float16',
  bfloat16: 'bfloat16',
};

/** The KV type 'auto' means for a Hugging Face checkpoint: its config.json dtype; null when absent or unknown. */
export function hfCheckpointKvDtype(configJson: Record<string, unknown>): KvStorageDtype | null {
  const declared = configJson.dtype ?? configJson.torch_dtype;
  return typeof declared === 'string' ? (HF_DTYPES[declared.replace(/^torch\./, '')] ?? null) : null;
}

/**
 * The KV type 'auto' means for a GGUF file: float16, llama.cpp's own default cache type (f16);
 * the GGUF weights' types (Q8_0, F32, …) say nothing about the activations they were trained in.
 */
export const GGUF_KV_DTYPE: KvStorageDtype = 'float16';
