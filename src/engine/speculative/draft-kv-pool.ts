// The draft model's own paged KV pool: how many blocks it gets, and which block each of its
// sequences holds. The draft's cache never decides whether a request runs: a sequence it cannot
// hold simply gets no drafts.

import { kvBytesPerBlock } from '../../model/runner';
import type { KvStorageDtype } from '../../model/runner/kv-dtype';
import type { ModelArchConfig } from '../../model/types';

/** Share of free memory the draft's pool may take (the target's automatic budget takes as much again). */
const DRAFT_KV_MEMORY_FRACTION = 0.2;

export interface DraftPoolPlan {
  numBlocks: number;
  bytesPerBlock: number;
}

export interface DraftPoolInputs {
  blockSize: number;
  kvCacheDtype: KvStorageDtype;
  maxModelLen: number;
  maxNumSeqs: number;
  /** Blocks of the target's (first) pool: the draft never needs to hold more tokens than it. */
  targetBlocks: number;
  numSpeculativeTokens: number;
  freeBytes: number;
}

/**
 * The draft holds the tokens the target holds plus each sequence's drafts: the target's block
 * count and the blocks k more tokens take per sequence, but no more than max_num_seqs sequences
 * of max_model_len, and within a share of free memory. Less than one max_model_len sequence is
 * refused: such a pool would never draft for long sequences.
 */
export function planDraftPool(config: ModelArchConfig, inputs: DraftPoolInputs): DraftPoolPlan {
  const bs = inputs.blockSize;
  const bytesPerBlock = kvBytesPerBlock(config, bs, inputs.kvCacheDtype);
  const perSequence = Math.ceil(inputs.maxModelLen / bs);
  const draftExtra = inputs.maxNumSeqs * Math.ceil(inputs.numSpeculativeTokens / bs);
  const wanted = Math.max(perSequence, Math.min(inputs.maxNumSeqs * perSequence, inputs.targetBlocks + draftExtra));
  const affordable = Math.floor((inputs.freeBytes * DRAFT_KV_MEMORY_FRACTION) / bytesPerBlock);
  const numBlocks = Math.min(wanted, affordable);
  if (numBlocks < perSequence) {
    throw new Error(
      `--speculative-config: the draft model's KV cache needs ${perSequence * bytesPerBlock} bytes for one sequence of max_model_len ${inputs.maxModelLen}, ` +
        `but only ${affordable * bytesPerBlock} bytes (${DRAFT_KV_MEMORY_FRACTION * 100}% of free memory) are available. Lower --max-model-len.`,
    );
  }
  return { numBlocks, bytesPerBlock };
}

/** Block ids of the draft's pool: a free list, and each sequence's table. */
export class DraftBlockPool {
  private readonly free: number[];

  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    // Popped from the end: block 0 first.
    this.free = Array.from({ length: numBlocks }, (_, i) => numBlocks - 1 - i);
  }

  get numFree(): number {
    return this.free.length;
  }

  get numUsed(): number {
    return this.numBlocks - this.free.length;
  }

  /**
   * Makes `table` cover exactly `numTokens` tokens: blocks past them go back, missing ones are
   * taken. False (table unchanged beyond the trim) when the pool lacks the blocks.
   */
  fit(table: number[], numTokens: number): boolean {
    const needed = Math.ceil(numTokens / this.blockSize);
    while (table.length > needed) this.free.push(table.pop()!);
    if (needed - table.length > this.free.length) return false;
    while (table.length < needed) table.push(this.free.pop()!);
    return true;
  }

  /** Returns every block of `table` to the pool and empties it. */
  freeAll(table: number[]): void {
    while (table.length > 0) this.free.push(table.pop()!);
  }
}
