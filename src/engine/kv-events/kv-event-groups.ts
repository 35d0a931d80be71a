// The KV cache groups of an engine's KV manager, as KV events number them: the one
// KvCacheManager (group 0), or each pool of a HybridKvCacheManager in order.

import { HybridKvCacheManager } from '../core/hybrid-kv-cache';
import { KvCacheManager, type EngineKvManager } from '../core/kv-cache-manager';
import { externalBlockHash } from './kv-event-wire';

export function kvEventGroupsOf(kv: EngineKvManager): readonly KvCacheManager[] {
  if (kv instanceof HybridKvCacheManager) return kv.pools;
  if (kv instanceof KvCacheManager) return [kv];
  return [];
}

/** What the replica's prefix cache holds now, with hashes as KV events send them (decimal strings: JSON numbers cannot hold 64 bits). */
export interface KvCachedBlocks {
  groups: Array<{ group_idx: number; block_size: number; sliding_window: number | null; block_hashes: string[] }>;
}

export function cachedBlocksOf(kv: EngineKvManager): KvCachedBlocks {
  return {
    groups: kvEventGroupsOf(kv).map((pool, groupIdx) => ({
      group_idx: groupIdx,
      block_size: pool.blockSize,
      sliding_window: pool.window > 0 ? pool.window : null,
      block_hashes: pool.cachedBlockHashes().map((h) => externalBlockHash(h).toString()),
    })),
  };
}
