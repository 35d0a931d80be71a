// What the runner stores its paged KV cache in. One entry per storage type the runner can
// hold; `--kv-cache-dtype` names them, and 'auto' is the model's own data type (as in vLLM),
// resolved per model by resolveKvCacheDtype (runner/index.ts).
//
// float16 and bfloat16 halve the bytes attention reads per past token (and the cache's memory:
// a byte budget holds twice the blocks); values are rounded when written and widened back to
// float32 (exactly) when read. Only the native attention kernel reads them (runner/native-attention.ts).

export type KvStorageDtype = 'float32' | 'float16' | 'bfloat16';

/** `--kv-cache-dtype`: a storage type, or 'auto' = the model's data type. */
export type KvCacheDtypeFlag = 'auto' | KvStorageDtype;

export interface KvStorage {
  bytesPerElement: number;
  /** The element type code of the native kernel (0 float32, 1 IEEE half, 2 bfloat16). */
  nativeCode: number;
}

export const KV_STORAGE: Record<KvStorageDtype, KvStorage> = {
  float32: { bytesPerElement: Float32Array.BYTES_PER_ELEMENT, nativeCode: 0 },
  float16: { bytesPerElement: Uint16Array.BYTES_PER_ELEMENT, nativeCode: 1 },
  bfloat16: { bytesPerElement: Uint16Array.BYTES_PER_ELEMENT, nativeCode: 2 },
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
