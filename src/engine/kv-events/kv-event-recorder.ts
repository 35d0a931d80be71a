// Collects one engine step's KV events from every KV cache group (pool) and hands them over as
// one batch, as vLLM's scheduler publishes one KVEventBatch per step that produced events.

import type { KvEventAdapter, KvEventSink } from './kv-event-sink';
import { externalBlockHash, MEDIUM_ENGINE_CACHE, type KvCacheEvent, type KvCacheSpecKind, type KvEventBatch } from './kv-event-wire';

/** One KV cache group as its events describe it. */
export interface KvEventGroup {
  groupIdx: number;
  blockSize: number;
  /** 0: full attention; else the sliding window, in tokens. */
  window: number;
}

export class KvEventRecorder {
  private events: KvCacheEvent[] = [];

  /** The sink of one group's manager. */
  sinkFor(group: KvEventGroup): KvEventSink {
    const kind: KvCacheSpecKind = group.window > 0 ? 'sliding_window' : 'full_attention';
    return {
      blockStored: (hashes, parentHash, tokenIds, adapter: KvEventAdapter | null) =>
        this.events.push({
          type: 'BlockStored',
          blockHashes: hashes.map(externalBlockHash),
          parentBlockHash: parentHash === null ? null : externalBlockHash(parentHash),
          tokenIds,
          blockSize: group.blockSize,
          loraId: adapter?.id ?? null,
          medium: MEDIUM_ENGINE_CACHE,
          loraName: adapter?.name ?? null,
          groupIdx: group.groupIdx,
          kvCacheSpecKind: kind,
          kvCacheSpecSlidingWindow: group.window > 0 ? group.window : null,
        }),
      blockRemoved: (hash) => {
        // Evictions in a row (one allocation taking several cached blocks) share one event.
        const last = this.events.at(-1);
        if (last?.type === 'BlockRemoved' && last.groupIdx === group.groupIdx) last.blockHashes.push(externalBlockHash(hash));
        else this.events.push({ type: 'BlockRemoved', blockHashes: [externalBlockHash(hash)], medium: MEDIUM_ENGINE_CACHE, groupIdx: group.groupIdx });
      },
      allBlocksCleared: () => {
        // Every group clears at once: one event says it for all.
        if (this.events.at(-1)?.type !== 'AllBlocksCleared') this.events.push({ type: 'AllBlocksCleared' });
      },
    };
  }

  /** The events since the last take, as a batch; null when there were none. */
  take(): KvEventBatch | null {
    if (this.events.length === 0) return null;
    const batch: KvEventBatch = { ts: Date.now() / 1000, events: this.events, dataParallelRank: 0 };
    this.events = [];
    return batch;
  }
}
