// One token sequence the scheduler runs: a request's prompt plus one completion.
// A request with n > 1 (or best_of) owns several sequences that share the prompt's KV.

import type { ImagePlacement, LoraRequest } from '../types';
import type { RemotePrefillSource } from '../kv-transfer/kv-transfer-params';
import type { ImageRun } from './image-runs';
import type { KvSequence } from './kv-cache-manager';

/** 'paused': its client is not reading; not scheduled until resumed (it keeps its KV while blocks allow). */
export type SequenceStatus = 'waiting' | 'running' | 'paused' | 'finished';

let arrivalCounter = 0;

export class Sequence implements KvSequence {
  /** Prompt + output tokens; the last one is not yet in the KV cache while decoding. */
  readonly tokenIds: number[];
  /** Tokens whose K/V are in the cache. */
  numComputedTokens = 0;
  status: SequenceStatus = 'waiting';
  /** Tie-breaker after priority: the order sequences reached the engine. */
  readonly arrivalOrder = arrivalCounter++;
  numPreemptions = 0;
  /** Prompt tokens served from the prefix cache the first time this sequence was scheduled. */
  numCachedPromptTokens = 0;
  /** Set the first time the scheduler admits this sequence (epoch ms, see clock.ts). */
  firstScheduledAt: number | null = null;
  /** Encoder-decoder models: whether this sequence's cross-attention K/V are in its encoder blocks (false again after preemption). */
  encoded = false;
  /**
   * Speculative decoding: tokens guessed to follow tokenIds, verified by the next step (which
   * computes them after the last token) and dropped after it, kept or not.
   */
  draftTokenIds: number[] = [];
  /**
   * A decode request's prompt KV to pull from a prefill replica (kv_transfer_params
   * do_remote_prefill); null for every other sequence. 'done' once pulled or given up.
   */
  remotePrefill: { source: RemotePrefillSource; state: 'pending' | 'pulling' | 'done' } | null = null;
  /** Images whose runs of positions are computed whole, in one step (bidirectional attention; null: none). */
  wholeImageRuns: readonly ImageRun[] | null = null;

  constructor(
    readonly seqId: string,
    readonly requestId: string,
    /** Completion index within its request (0 .. best_of-1). */
    readonly index: number,
    tokenIds: readonly number[],
    readonly numPromptTokens: number,
    readonly priority: number,
    readonly cacheSalt: string | null,
    /** Prompt logprobs need logits of every prompt position, which a cache hit would skip. */
    readonly skipPrefixCache: boolean,
    /** Encoder-decoder models: the request's encoder input (null for decoder-only models). */
    readonly encoderInput: Float32Array | null = null,
    /** Cross-attention K/V positions this sequence keeps in the KV cache (0 without an encoder). */
    readonly numEncoderPositions = 0,
    /** The request's LoRA adapter (null: the base model); n > 1 children share their parent's. */
    readonly lora: LoraRequest | null = null,
    /** The prompt's images: their hashes key the prefix-cache blocks holding their rows (null: none). */
    readonly imagePlacements: readonly ImagePlacement[] | null = null,
  ) {
    this.tokenIds = [...tokenIds];
  }

  /**
   * What keys its prefix-cache blocks (vLLM's LoRA extra hash key): the adapter's name, and its
   * load's id, because a name unloaded and loaded again (or reloaded in place) may hold other weights,
   * and blocks computed with the old ones must not serve the new.
   */
  get loraKey(): string | null {
    return this.lora ? `${this.lora.name}@${this.lora.id}` : null;
  }

  get numTokens(): number {
    return this.tokenIds.length;
  }

  /** Tokens the next step may compute up to: tokenIds and the drafts after them. */
  get numTokensWithDrafts(): number {
    return this.tokenIds.length + this.draftTokenIds.length;
  }
}
