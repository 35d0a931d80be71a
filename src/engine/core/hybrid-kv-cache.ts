// Block accounting over several KV pools (vLLM's hybrid KV cache coordinator): a model whose
// sliding-window layers keep their K/V in a pool of their own (model/runner/kv-pools.ts) has one
// KvCacheManager per pool, each with its own block ids, tables and prefix cache. A sequence needs
// blocks in every pool, so an allocation is all or nothing; a prefix hit is the longest one every
// pool can serve (a windowed pool only needs the window before the hit's end).

import { poolsDifferFromOne } from '../../model/runner/kv-pools';
import type { ModelRunner } from '../../model/types';
import { KvCacheManager, type EngineKvManager, type KvSequence, type PrefixHit } from './kv-cache-manager';

/** One pool as the manager sees it: its block count, its window (0: full attention) and how many layers share a block. */
export interface KvPoolShape {
  numBlocks: number;
  window: number;
  numLayers: number;
}

/** A hit in every pool; the scheduler hands it back to allocate unread. */
interface HybridHit extends PrefixHit {
  pools: PrefixHit[];
}

export class HybridKvCacheManager {
  readonly pools: readonly KvCacheManager[];
  private readonly layerCounts: readonly number[];

  constructor(
    shapes: readonly KvPoolShape[],
    readonly blockSize: number,
    readonly enablePrefixCaching: boolean,
  ) {
    if (shapes.length === 0) throw new Error('at least one KV pool');
    this.pools = shapes.map((s) => new KvCacheManager(s.numBlocks, blockSize, enablePrefixCaching, s.window));
    this.layerCounts = shapes.map((s) => s.numLayers);
  }

  /** Pool 0's block count (what num_gpu_blocks reports). */
  get numBlocks(): number {
    return this.pools[0].numBlocks;
  }

  /** Fraction of the KV memory held by sequences: each pool's held blocks weighted by the layers a block spans. */
  usage(): number {
    let held = 0;
    let total = 0;
    this.pools.forEach((pool, p) => {
      held += (pool.numBlocks - pool.numFreeBlocks) * this.layerCounts[p];
      total += pool.numBlocks * this.layerCounts[p];
    });
    return held / total;
  }

  blockTable(seqId: string): readonly number[] {
    return this.pools[0].blockTable(seqId);
  }

  /** The sequence's table in each pool (a windowed pool's may hold RELEASED entries). */
  blockTables(seqId: string): readonly (readonly number[])[] {
    return this.pools.map((pool) => pool.blockTable(seqId));
  }

  encoderBlockTable(seqId: string): readonly number[] {
    return this.pools[0].encoderBlockTable(seqId);
  }

  /** Shrinks the hit until every pool serves it: each pool's lookup is capped by the others' until they agree. */
  findPrefixHit(seq: KvSequence, maxHitBlocks = Infinity): PrefixHit {
    let blocks = maxHitBlocks;
    let hits: PrefixHit[] = [];
    for (let settled = false; !settled; ) {
      hits = this.pools.map((pool) => pool.findPrefixHit(seq, blocks));
      const least = Math.min(...hits.map((h) => h.numTokens / this.blockSize));
      settled = hits.every((h) => h.numTokens === least * this.blockSize);
      blocks = least;
    }
    const hit: HybridHit = { blockIds: hits[0].blockIds, numTokens: hits[0].numTokens, recomputedTokens: hits[0].recomputedTokens, pools: hits };
    return hit;
  }

  allocate(seq: KvSequence, numComputedTokens: number, numNewTokens: number, hit?: PrefixHit): boolean {
    const hits = (hit as HybridHit | undefined)?.pools;
    for (const pool of this.pools) pool.releaseBehindWindow(seq.seqId, numComputedTokens);
    if (!this.pools.every((pool, p) => pool.fits(seq, numComputedTokens, numNewTokens, hits?.[p]))) return false;
    this.pools.forEach((pool, p) => {
      if (!pool.allocate(seq, numComputedTokens, numNewTokens, hits?.[p])) throw new Error(`KV pool ${p} refused an allocation it said fits`);
    });
    return true;
  }

  cacheComputedBlocks(seq: KvSequence, numComputedTokens: number): void {
    for (const pool of this.pools) pool.cacheComputedBlocks(seq, numComputedTokens);
  }

  /** The (src, dst, pool) copies of every pool, or null when one pool has no block free for its copy. */
  fork(parentId: string, childId: string, numComputedTokens: number): Array<[number, number, number]> | null {
    // A fork copies at most one block per pool.
    if (this.pools.some((pool) => pool.numFreeBlocks === 0)) return null;
    return this.pools.flatMap((pool, p) => pool.fork(parentId, childId, numComputedTokens)!.map(([src, dst]): [number, number, number] => [src, dst, p]));
  }

  free(seqId: string): void {
    for (const pool of this.pools) pool.free(seqId);
  }

  trim(seqId: string, numTokens: number): void {
    for (const pool of this.pools) pool.trim(seqId, numTokens);
  }

  resetPrefixCache(): void {
    for (const pool of this.pools) pool.resetPrefixCache();
  }
}

/** The runner's KV pools as the engine manages them: one KvCacheManager, or a HybridKvCacheManager over several pools or a windowed one. */
export function kvManagerFor(runner: Pick<ModelRunner, 'numBlocks' | 'blockSize' | 'kvPools'>, enablePrefixCaching: boolean): EngineKvManager {
  const pools = runner.kvPools;
  if (!pools || !poolsDifferFromOne(pools)) return new KvCacheManager(runner.numBlocks, runner.blockSize, enablePrefixCaching);
  return new HybridKvCacheManager(pools.map((p) => ({ numBlocks: p.numBlocks, window: p.window, numLayers: p.layers.length })), runner.blockSize, enablePrefixCaching);
}

/**
 * Blocks of pool 0 that bound one sequence's length: all of them when pool 0 holds full-attention
 * layers; none when every layer slides (a sequence holds only its window: max_model_len bounds it).
 */
export function capacityBlocks(runner: Pick<ModelRunner, 'numBlocks' | 'blockSize' | 'kvPools'>, maxModelLen: number): number {
  const window = runner.kvPools?.[0].window ?? 0;
  return window > 0 ? Math.ceil(maxModelLen / runner.blockSize) : runner.numBlocks;
}
