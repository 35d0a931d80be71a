// Block accounting over the runner's paged KV cache (vLLM V1 KVCacheManager, one group).
// The runner owns the memory; this class decides which block ids each sequence uses,
// shares full blocks between sequences by refcount (prefix caching, n > 1 children),
// and evicts free cached blocks in LRU order.
// Encoder-decoder sequences also hold encoder blocks (the cross-attention K/V of their encoder
// input), taken with their first decoder blocks and released with them. Their decoder blocks are
// never prefix-cached: the decoder's K/V depend on the audio, not only on the tokens.
// With a sliding window (the pool of sliding-window layers, hybrid-kv-cache.ts), blocks wholly
// behind the window of the next position to compute are released as the sequence advances
// (RELEASED in its table), and a prefix hit needs only the window's blocks before the hit's end.

import { hashBlock } from './block-hash';
import { FreeBlockQueue } from './free-block-queue';
import type { KvEventAdapter, KvEventSink } from '../kv-events/kv-event-sink';
import type { ImagePlacement } from '../types';

/** What the KV manager needs to know about a sequence. */
export interface KvSequence {
  readonly seqId: string;
  /** Prompt + output tokens so far. */
  readonly tokenIds: readonly number[];
  readonly cacheSalt: string | null;
  /** The LoRA adapter's name and load (Sequence.loraKey): its blocks are cached apart from the base model's and other adapters' (absent: base). */
  readonly loraKey?: string | null;
  /** The adapter's id and name, as KV events report them (absent: base). */
  readonly lora?: KvEventAdapter | null;
  /** Cross-attention positions the sequence keeps in encoder blocks (0 for decoder-only models). */
  readonly numEncoderPositions: number;
  /** The prompt's images: a block holding some of their rows is keyed by their hashes too (absent: none). */
  readonly imagePlacements?: readonly ImagePlacement[] | null;
}

export interface PrefixHit {
  blockIds: number[];
  numTokens: number;
  /** Tokens of the next full block when it is cached too but must be computed for the logits. */
  recomputedTokens?: number;
  /** Windowed pools: the hashes of the hit's blocks (released ones, RELEASED in blockIds, have no cache entry to read them from). */
  hashes?: string[];
}

/** A block table entry whose block was released: wholly behind the sliding window. */
export const RELEASED = -1;

interface SeqBlocks {
  /** Per logical block its id, or RELEASED. */
  blockIds: number[];
  /** Leading entries already RELEASED (windowed pools). */
  released: number;
  /** Chained hashes of this sequence's full blocks computed so far. */
  hashes: string[];
  encoderBlockIds: number[];
}

/** A block copy for the runner: source, destination and the pool they are in (0 when absent). */
export type BlockCopy = readonly [src: number, dst: number, pool?: number];

/** What the scheduler asks of KV memory (KvCacheManager; HybridKvCacheManager with several pools; NoKvBlocks for pooling models, which keep none). */
export type BlockManager = Pick<KvCacheManager, 'enablePrefixCaching' | 'findPrefixHit' | 'allocate' | 'cacheComputedBlocks' | 'free' | 'trim'> & {
  fork(parentId: string, childId: string, numComputedTokens: number): BlockCopy[] | null;
};

/** What the engine core reads of its KV manager besides the scheduler's part. */
export type EngineKvManager = BlockManager &
  Pick<KvCacheManager, 'numBlocks' | 'blockSize' | 'usage' | 'blockTable' | 'encoderBlockTable' | 'resetPrefixCache'> & {
    /** With several pools: the sequence's table in each. */
    blockTables?(seqId: string): readonly (readonly number[])[];
  };

export class KvCacheManager {
  private readonly refCounts: Int32Array;
  private readonly blockHashes: (string | null)[];
  private readonly freeQueue: FreeBlockQueue;
  private readonly cachedBlocks = new Map<string, number>();
  private readonly seqs = new Map<string, SeqBlocks>();
  /** Told of every change to the prefix cache (--kv-events-config); null: nobody listens. */
  events: KvEventSink | null = null;

  /** `window` > 0: the pool of layers attending within that sliding window. */
  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
    readonly enablePrefixCaching: boolean,
    readonly window = 0,
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new Error(`numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new Error(`blockSize must be a positive integer, got ${blockSize}`);
    this.refCounts = new Int32Array(numBlocks);
    this.blockHashes = new Array<string | null>(numBlocks).fill(null);
    this.freeQueue = new FreeBlockQueue(numBlocks);
  }

  get numFreeBlocks(): number {
    return this.freeQueue.length;
  }

  /** Fraction of blocks held by sequences (free cached blocks count as free). */
  usage(): number {
    return (this.numBlocks - this.freeQueue.length) / this.numBlocks;
  }

  blocksFor(numTokens: number): number {
    return Math.ceil(numTokens / this.blockSize);
  }

  blockTable(seqId: string): readonly number[] {
    return this.seqs.get(seqId)?.blockIds ?? [];
  }

  /** The blocks holding the sequence's cross-attention K/V (empty for decoder-only sequences). */
  encoderBlockTable(seqId: string): readonly number[] {
    return this.seqs.get(seqId)?.encoderBlockIds ?? [];
  }

  /**
   * Longest run of cached full blocks at the start of the sequence. At least one token is
   * always left to compute, because the step that computes it yields the logits to sample.
   * Looking up does not claim the blocks: `allocate` does.
   */
  findPrefixHit(seq: KvSequence, maxHitBlocks = Infinity): PrefixHit {
    if (!this.enablePrefixCaching || seq.numEncoderPositions > 0) return { blockIds: [], numTokens: 0 };
    const maxBlocks = Math.min(maxHitBlocks, Math.floor((seq.tokenIds.length - 1) / this.blockSize));
    if (this.window > 0) return this.findWindowedHit(seq, maxBlocks);
    const blockIds: number[] = [];
    let parent: string | null = null;
    for (let i = 0; i < maxBlocks; i++) {
      const hash = this.hashBlockOf(seq, i, parent);
      const id = this.cachedBlocks.get(hash);
      if (id === undefined) break;
      blockIds.push(id);
      parent = hash;
    }
    const next = blockIds.length;
    const recomputed =
      next === maxBlocks && (next + 1) * this.blockSize <= seq.tokenIds.length && this.cachedBlocks.has(this.hashBlockOf(seq, next, parent));
    return { blockIds, numTokens: blockIds.length * this.blockSize, recomputedTokens: recomputed ? this.blockSize : 0 };
  }

  /** Forgets every cached block (vLLM reset_prefix_cache); blocks held by sequences stay theirs. */
  resetPrefixCache(): void {
    this.cachedBlocks.clear();
    this.blockHashes.fill(null);
    this.events?.allBlocksCleared();
  }

  /** The hashes of the blocks in the prefix cache now (what KV events have announced and not removed). */
  cachedBlockHashes(): string[] {
    return [...this.cachedBlocks.keys()];
  }

  /**
   * Makes the sequence's block table cover `numComputedTokens + numNewTokens` tokens,
   * claiming `hit` blocks first (a waiting sequence's prefix-cache hit). Returns false and
   * changes nothing when there are not enough free blocks.
   */
  allocate(seq: KvSequence, numComputedTokens: number, numNewTokens: number, hit?: PrefixHit): boolean {
    // Every running sequence comes through here every step, so this path builds no arrays.
    this.releaseBehindWindow(seq.seqId, numComputedTokens);
    if (!this.fits(seq, numComputedTokens, numNewTokens, hit)) return false;
    const known = this.seqs.get(seq.seqId);
    const state = known ?? { blockIds: [], released: 0, hashes: [], encoderBlockIds: [] };
    const hitBlocks = hit?.blockIds ?? NO_BLOCKS;
    const need = Math.max(0, this.blocksFor(numComputedTokens + numNewTokens) - state.blockIds.length - hitBlocks.length);
    const encoderNeed = state.encoderBlockIds.length === 0 ? this.blocksFor(seq.numEncoderPositions) : 0;
    for (let i = 0; i < encoderNeed; i++) state.encoderBlockIds.push(this.takeFreeBlock());

    for (let i = 0; i < hitBlocks.length; i++) {
      const id = hitBlocks[i];
      if (id === RELEASED) {
        state.released++;
      } else {
        this.claim(id);
      }
      state.blockIds.push(id);
      // The hashes of hit blocks are those of the cache entries just matched.
      state.hashes.push(hit?.hashes?.[i] ?? (this.blockHashes[id] as string));
    }
    for (let i = 0; i < need; i++) state.blockIds.push(this.takeFreeBlock());
    if (known === undefined) this.seqs.set(seq.seqId, state);
    return true;
  }

  /** Whether `allocate` with these arguments would succeed (it changes nothing). */
  fits(seq: KvSequence, numComputedTokens: number, numNewTokens: number, hit?: PrefixHit): boolean {
    const state = this.seqs.get(seq.seqId);
    const hitBlocks = hit?.blockIds ?? NO_BLOCKS;
    const have = (state?.blockIds.length ?? 0) + hitBlocks.length;
    const need = Math.max(0, this.blocksFor(numComputedTokens + numNewTokens) - have);
    const encoderNeed = state === undefined || state.encoderBlockIds.length === 0 ? this.blocksFor(seq.numEncoderPositions) : 0;
    let hitBlocksNowFree = 0;
    for (const id of hitBlocks) if (id !== RELEASED && this.freeQueue.has(id)) hitBlocksNowFree++;
    return need + encoderNeed <= this.freeQueue.length - hitBlocksNowFree;
  }

  /**
   * Windowed pools: releases the sequence's blocks wholly behind the window of `position` (the
   * next one to compute), which no later query reads. Cached ones stay reusable until evicted.
   */
  releaseBehindWindow(seqId: string, position: number): void {
    if (this.window === 0) return;
    const state = this.seqs.get(seqId);
    if (!state) return;
    const behind = Math.min(state.blockIds.length, Math.floor(Math.max(0, position - this.window + 1) / this.blockSize));
    for (; state.released < behind; state.released++) {
      const id = state.blockIds[state.released];
      if (id === RELEASED) continue;
      state.blockIds[state.released] = RELEASED;
      this.release(id);
    }
  }

  /** Registers the sequence's fully computed blocks in the prefix cache. */
  cacheComputedBlocks(seq: KvSequence, numComputedTokens: number): void {
    if (!this.enablePrefixCaching || seq.numEncoderPositions > 0) return;
    const state = this.seqs.get(seq.seqId);
    if (!state) return;
    const numFull = Math.min(Math.floor(numComputedTokens / this.blockSize), state.blockIds.length);
    /** Events: where the run of blocks just cached began (-1: none). */
    let runStart = -1;
    for (let i = state.hashes.length; i < numFull; i++) {
      const parent = i === 0 ? null : state.hashes[i - 1];
      const hash = this.hashBlockOf(seq, i, parent);
      state.hashes.push(hash);
      const id = state.blockIds[i];
      // A block computed twice (two requests prefilling the same prefix in one step)
      // stays uncached: the first copy already serves future hits.
      const cached = id !== RELEASED && this.blockHashes[id] === null && !this.cachedBlocks.has(hash);
      if (cached) {
        this.blockHashes[id] = hash;
        this.cachedBlocks.set(hash, id);
      }
      if (this.events === null) continue;
      if (cached && runStart < 0) runStart = i;
      if (!cached && runStart >= 0) {
        this.storedEvent(seq, state, runStart, i);
        runStart = -1;
      }
    }
    if (runStart >= 0) this.storedEvent(seq, state, runStart, numFull);
  }

  /** Tells the sink that the sequence's blocks [start, end) entered the cache. */
  private storedEvent(seq: KvSequence, state: SeqBlocks, start: number, end: number): void {
    const tokens = seq.tokenIds.slice(start * this.blockSize, end * this.blockSize);
    this.events!.blockStored(state.hashes.slice(start, end), start === 0 ? null : state.hashes[start - 1], tokens, seq.lora ?? null);
  }

  /**
   * Gives the child the parent's blocks: full blocks shared by refcount, the partial last
   * block copied into a fresh one. Returns the (src, dst) pairs for runner.copyBlocks,
   * or null when no block is free for the copy.
   */
  fork(parentId: string, childId: string, numComputedTokens: number): Array<[number, number]> | null {
    const parent = this.seqs.get(parentId);
    if (!parent) throw new Error(`unknown sequence ${parentId}`);
    const numFull = Math.floor(numComputedTokens / this.blockSize);
    const hasPartial = parent.blockIds.length > numFull;
    if (hasPartial && this.freeQueue.length === 0) return null;
    const blockIds = parent.blockIds.slice(0, numFull);
    // The cross-attention K/V never change after encoding: the child shares them.
    const encoderBlockIds = [...parent.encoderBlockIds];
    for (const id of [...blockIds, ...encoderBlockIds]) if (id !== RELEASED) this.claim(id);
    const pairs: Array<[number, number]> = [];
    if (hasPartial) {
      const copy = this.takeFreeBlock();
      pairs.push([parent.blockIds[numFull], copy]);
      blockIds.push(copy);
    }
    this.seqs.set(childId, { blockIds, released: Math.min(parent.released, numFull), hashes: parent.hashes.slice(0, numFull), encoderBlockIds });
    return pairs;
  }

  /**
   * Releases the sequence's blocks past those `numTokens` positions need (speculative decoding:
   * blocks taken for drafted tokens that were rejected). Such blocks were never full and computed,
   * so none of them is in the prefix cache.
   */
  trim(seqId: string, numTokens: number): void {
    const state = this.seqs.get(seqId);
    if (!state) return;
    const keep = Math.max(this.blocksFor(numTokens), state.hashes.length);
    while (state.blockIds.length > keep) {
      const id = state.blockIds.pop()!;
      if (id !== RELEASED) this.release(id);
    }
  }

  /** Releases the sequence's blocks; cached ones stay reusable until evicted. */
  free(seqId: string): void {
    const state = this.seqs.get(seqId);
    if (!state) return;
    this.seqs.delete(seqId);
    // Tail blocks first: they are the least likely to be shared, so they are evicted first.
    const owned = [...state.encoderBlockIds, ...state.blockIds];
    for (let i = owned.length - 1; i >= 0; i--) if (owned[i] !== RELEASED) this.release(owned[i]);
  }

  /** Holds the blocks beyond their sequence's life (a prefill's KV waiting to be pulled): one reference each. */
  pinBlocks(ids: readonly number[]): void {
    for (const id of ids) this.claim(id);
  }

  /** Lets go of pinBlocks' references. */
  unpinBlocks(ids: readonly number[]): void {
    for (const id of ids) this.release(id);
  }

  /** Drops one reference to the block; at none it is free (uncached ones are taken first). */
  private release(id: number): void {
    if (--this.refCounts[id] > 0) return;
    if (this.blockHashes[id] === null) this.freeQueue.pushFront(id);
    else this.freeQueue.pushBack(id);
  }

  /**
   * The longest hit of at most `maxBlocks` blocks whose window is cached: the blocks the first
   * computed position's window reads (those from (hit end - window + 1) on); blocks before them
   * need not be cached, and the hit lists them RELEASED (vLLM's sliding-window prefix rule).
   */
  private findWindowedHit(seq: KvSequence, maxBlocks: number): PrefixHit {
    const hashes: string[] = [];
    for (let i = 0; i < maxBlocks; i++) hashes.push(this.hashBlockOf(seq, i, i === 0 ? null : hashes[i - 1]));
    for (let end = maxBlocks; end > 0; end--) {
      const first = Math.floor(Math.max(0, end * this.blockSize - this.window + 1) / this.blockSize);
      const ids: number[] = [];
      for (let i = first; i < end; i++) {
        const id = this.cachedBlocks.get(hashes[i]);
        if (id === undefined) break;
        ids.push(id);
      }
      if (ids.length < end - first) continue;
      const blockIds = [...new Array<number>(first).fill(RELEASED), ...ids];
      return { blockIds, numTokens: end * this.blockSize, hashes: hashes.slice(0, end), recomputedTokens: 0 };
    }
    return { blockIds: [], numTokens: 0 };
  }

  /** Chained hash of the sequence's full block `index`. */
  private hashBlockOf(seq: KvSequence, index: number, parentHash: string | null): string {
    const start = index * this.blockSize;
    const end = start + this.blockSize;
    return hashBlock(parentHash, seq.tokenIds, seq.cacheSalt, start, end, seq.loraKey ?? null, imageKeys(seq.imagePlacements, start, end));
  }

  private claim(id: number): void {
    if (this.refCounts[id] === 0) this.freeQueue.remove(id);
    this.refCounts[id]++;
  }

  private takeFreeBlock(): number {
    const id = this.freeQueue.popFront();
    const hash = this.blockHashes[id];
    if (hash !== null) {
      this.blockHashes[id] = null;
      if (this.cachedBlocks.get(hash) === id) {
        this.cachedBlocks.delete(hash);
        this.events?.blockRemoved(hash);
      }
    }
    this.refCounts[id] = 1;
    return id;
  }
}

/** No prefix-cache hit: the blocks claimed from it. */
const NO_BLOCKS: readonly number[] = [];

/**
 * vLLM's multimodal extra keys: each image whose rows fall in [start, end), by its hash and where
 * its run starts, so equal placeholder ids with other pixels never share a block. null: none.
 */
function imageKeys(placements: readonly ImagePlacement[] | null | undefined, start: number, end: number): string | null {
  if (!placements) return null;
  let keys: string | null = null;
  for (const p of placements) {
    if (p.offset >= end || p.offset + p.length <= start) continue;
    const key = `${p.hash}@${p.offset}`;
    keys = keys === null ? key : `${keys},${key}`;
  }
  return keys;
}
