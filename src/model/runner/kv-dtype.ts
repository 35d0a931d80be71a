// What the runner stores its paged KV cache in. One entry per storage type the runner can
// hold; `--kv-cache-dtype` names them, and 'auto' is the model's own data type (as in vLLM),
// resolved per model by resolveKvCacheDtype (runner/index.ts).
//
// float16 and bfloat16 halve the bytes attention reads per past token (and the cache's memory:
// a byte budget holds twice the blocks); values are rounded when written and widened back to
// float32 (exactly) when read. Only the native attention kernel reads them (runner/native-attention.ts).
//
// Measured (issue 16), 2 shared cores, two interleaved rounds each, float32 -> float16 KV:
//   runner alone, `node dist/bench/forward.js --models stories260K,100m-gguf --contexts 128,1024
//   --batches 1,32 --seconds 3 [--kv-cache-dtype float16]`, tok/s:
//     stories260K ctx 128 b1 5678/5576 -> 5167/5504, b32 34562/27529 -> 27210/34452,
//       ctx 1024 prefill 55485/58503 -> 39292/54146, b1 3990/4223 -> 3056/4388, b32 5712/9012 -> 8900/9479
//     100M Q8_0 ctx 128 prefill 1740/2050 -> 1509/1647, b1 147/156 -> 118/154, b32 650/870 -> 429/489,
//       ctx 1024 prefill 1092/1451 -> 652/697, b1 88/107 -> 68/73, b32 254/334 -> 196/166
//   served (`node dist/bench/serve.js --models stories,100m --prompts short,long --concurrency 1,32
//   --max-tokens 64 --peer none [--ortllm-args "--kv-cache-dtype float32"]`), output tok/s
//   float32 r1/r2 -> float16 r1/r2: stories short c1 2673/2710 -> 2328/1623, c32 9194/9827 ->
//   8507/6801, long c1 1616/1777 -> 1480/1083, c32 2718/2663 -> 2464/1613; 100M short c1 173/159
//   -> 150/161, c32 988/773 -> 700/758, long c1 60.5/62.9 -> 54.8/58.2, c32 83.9/87.6 -> 79.7/80.3.
//   So the 16-bit reads cost speed on the 100M model then (prefill at 1024 up to 2x), while the
//   cache takes half the memory: 1.1B Q8_0 (22 layers, 4 KV heads of 64), 32 distinct ~700-token
//   prompts at once touch 1536 blocks, 1056 MiB in float32, 528 in float16.
// Then the kernel's V pass was reworked for 16-bit rows (native/src/attention.cc) and writeKv
// narrowed new rows with a scalar call per value: 52 ms per 700-token prompt of the 100M shape as
// half (21 as bfloat16, 1.3 to copy float32). Narrowed eight at a time with F16C / AVX2 it takes
// 0.8 ms. After both, served 100M long prompts, two interleaved rounds, float32 -> float16:
// c1 57.5/59.7 -> 56.4/57.4 tok/s, c32 83.6/87.9 -> 90.7/91.7; runner alone b32 decode at the
// served depth 392/403 -> 531/508 tok/s, prefill 1759/1689 -> 1721/1919. float16 is the default
// for GGUF files ('auto'), as in llama.cpp.
// fp8_e4m3 / fp8_e5m2 (vLLM's 8-bit caches) quarter float32's bytes: on the 100M shape at context
// 1024, batch 32, the step's CPU time falls from ~118 ms (float16) to ~91 (e4m3) / ~82 (e5m2)
// (with the VNNI GEMM of the linears: 97 -> 81 / 66-70),
// at a cost in accuracy (stories260K's logits move ~100x more than with float16; see
// native/src/attention.cc's header for the measurements and test/unit/model/native-attention-fp8.test.ts).
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
  /** A cache array of `n` elements (8-bit floats as their bytes, 16-bit ones as their bits). */
  allocate(n: number): Float32Array | Uint16Array | Uint8Array;
}

export const KV_STORAGE: Record<KvStorageDtype, KvStorage> = {
  float32: { bytesPerElement: 4, nativeCode: 0, allocate: (n) => new Float32Array(n) },
  float16: { bytesPerElement: 2, nativeCode: 1, allocate: (n) => new Uint16Array(n) },
  bfloat16: { bytesPerElement: 2, nativeCode: 2, allocate: (n) => new Uint16Array(n) },
  // OCP 8-bit floats, as vLLM's fp8 caches with their default per-layer scales of 1.0 (no
  // checkpoint scales are read): values are rounded to nearest even when written, magnitudes
  // past the largest finite (448 / 57344) saturate to it, NaN stays NaN (__NV_SATFINITE).
  fp8_e4m3: { bytesPerElement: 1, nativeCode: 3, allocate: (n) => new Uint8Array(n) },
  fp8_e5m2: { bytesPerElement: 1, nativeCode: 4, allocate: (n) => new Uint8Array(n) },
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
