// What the runner stores its paged KV cache in. One entry per storage type the runner can
// hold; `--kv-cache-dtype` values map onto them in KV_CACHE_DTYPE_STORAGE.
//
// bfloat16 (vLLM's `--kv-cache-dtype bfloat16`) halves the bytes attention reads per past token;
// values are rounded to bfloat16 when written and widened back to float32 (exactly) when read.
// Only the native attention kernel reads it (runner/native-attention.ts).

export type KvStorageDtype = 'float32' | 'bfloat16';

export interface KvStorage {
  bytesPerElement: number;
  /** The element type code of the native kernel (0 float32, 2 bfloat16). */
  nativeCode: number;
}

export const KV_STORAGE: Record<KvStorageDtype, KvStorage> = {
  float32: { bytesPerElement: Float32Array.BYTES_PER_ELEMENT, nativeCode: 0 },
  bfloat16: { bytesPerElement: Uint16Array.BYTES_PER_ELEMENT, nativeCode: 2 },
};

/** `--kv-cache-dtype` → storage. 'auto': float32, whatever --dtype computes in (the graph casts). */
export const KV_CACHE_DTYPE_STORAGE = {
  auto: 'float32',
  bfloat16: 'bfloat16',
} as const satisfies Record<string, KvStorageDtype>;
