// What the runner stores its paged KV cache in. One entry per storage type the runner can
// hold; `--kv-cache-dtype` values map onto them in KV_CACHE_DTYPE_STORAGE. A 16-bit cache is
// one more entry here (plus its array type in PagedKvCache and the graph's cast).

export type KvStorageDtype = 'float32';

export interface KvStorage {
  bytesPerElement: number;
}

export const KV_STORAGE: Record<KvStorageDtype, KvStorage> = {
  float32: { bytesPerElement: Float32Array.BYTES_PER_ELEMENT },
};

/** `--kv-cache-dtype` → storage. 'auto': float32, whatever --dtype computes in (the graph casts). */
export const KV_CACHE_DTYPE_STORAGE = {
  auto: 'float32',
} as const satisfies Record<string, KvStorageDtype>;
