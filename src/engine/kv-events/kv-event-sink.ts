// What a KvCacheManager tells about its prefix cache, when someone listens (--kv-events-config):
// a manager without a sink (the default) does no work for events at all.

/** An adapter as KV events name it (vLLM's lora_id and lora_name). */
export interface KvEventAdapter {
  readonly id: number;
  readonly name: string;
}

export interface KvEventSink {
  /**
   * Full blocks entered the prefix cache: consecutive blocks of one sequence, `hashes` in order,
   * chained on `parentHash` (null: the first block), holding `tokenIds` (a fresh array the sink may keep).
   */
  blockStored(hashes: readonly string[], parentHash: string | null, tokenIds: number[], adapter: KvEventAdapter | null): void;
  /** A cached block was evicted: its memory now holds other tokens. */
  blockRemoved(hash: string): void;
  /** Every cached block was forgotten (reset_prefix_cache, sleep). */
  allBlocksCleared(): void;
}
