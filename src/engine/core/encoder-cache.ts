// Encoder outputs by image hash (ImagePlacement.hash: pixels, size and processor kwargs), least
// recently used out first, bounded in bytes (--mm-processor-cache-gb). An image sent again skips
// preprocessing and the tower. vLLM caches the processor's output (pixel values) under that flag
// and the encoder's output in a second, token-bounded cache; here one cache holds the encoder's
// output, which is what a hit saves the most of. `query` counts vllm:mm_cache_* once per image of
// each request, as vLLM's processor cache counts every item it processes, even one the prefix
// cache then covers (a repeated image in a second turn is a hit though its rows are never read).

export interface EncoderCacheStats {
  queries: number;
  hits: number;
}

export class EncoderCache {
  /** Insertion order is recency order: a hit moves its entry to the end. */
  private readonly entries = new Map<string, Float32Array>();
  private bytes = 0;
  private queries = 0;
  private hits = 0;

  constructor(readonly capacityBytes: number) {
    if (!(capacityBytes >= 0)) throw new Error(`encoder cache capacity must be >= 0 bytes, got ${capacityBytes}`);
  }

  get usedBytes(): number {
    return this.bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /** One lookup of a request's image for the metrics: whether `hash` is held (then most recently used). */
  query(hash: string): boolean {
    this.queries++;
    const found = this.get(hash) !== undefined;
    if (found) this.hits++;
    return found;
  }

  /** The rows encoded for `hash` (not counted: `query` counts each request's images once). */
  get(hash: string): Float32Array | undefined {
    const rows = this.entries.get(hash);
    if (rows === undefined) return undefined;
    this.entries.delete(hash);
    this.entries.set(hash, rows);
    return rows;
  }

  /** Keeps `rows` under `hash`, evicting the least recently used; rows larger than the whole cache are not kept. */
  put(hash: string, rows: Float32Array): void {
    if (rows.byteLength > this.capacityBytes || this.entries.has(hash)) return;
    for (const [oldest, old] of this.entries) {
      if (this.bytes + rows.byteLength <= this.capacityBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.byteLength;
    }
    this.entries.set(hash, rows);
    this.bytes += rows.byteLength;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  /** Lookups since the last drain (null when none). */
  drainStats(): EncoderCacheStats | null {
    if (this.queries === 0) return null;
    const stats = { queries: this.queries, hits: this.hits };
    this.queries = this.hits = 0;
    return stats;
  }
}
