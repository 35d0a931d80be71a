// The proposer seam of speculative decoding: something that guesses each decoding sequence's
// next tokens cheaply, so one batched forward pass of the target model verifies them all.
// Each method is a ProposerFactory listed in proposers.ts (n-gram lookup, a draft model;
// EAGLE-style heads can follow the same way).

import type { ModelRunner } from '../../model/types';
import type { SpeculativeConfig, SpeculativeMethod } from './speculative-config';

/** One decoding sequence asking for drafts. */
export interface DraftRequest {
  seqId: string;
  /** Prompt and output so far; the last token is not yet in the target's KV cache. */
  tokenIds: readonly number[];
  numPromptTokens: number;
  /** The most tokens to draft (<= num_speculative_tokens; fewer near max_tokens or max_model_len). */
  maxDrafts: number;
}

export interface DraftProposer {
  /** The drafts of each request, in order (an empty array: none for that sequence). */
  propose(requests: readonly DraftRequest[]): Promise<number[][]> | number[][];
  /** The sequence finished or lost its KV (preemption): drop what is kept for it. */
  release(seqId: string): void;
  dispose(): Promise<void>;
}

/** What a proposer may build on: the target's runner (vocabulary, its weights for a shared head). */
export interface ProposerContext {
  config: SpeculativeConfig;
  target: ModelRunner;
  /** Options the target's runner was built with (a draft model's runner follows them). */
  runnerOptions: import('../../model/types').RunnerOptions;
  maxModelLen: number;
  maxNumSeqs: number;
  /** The target's tokenizer (a draft model's vocabulary is checked against it); null or absent: none. */
  targetTokenizer?: import('../../model/types').Tokenizer | null;
  /** How the target was loaded (a draft model loads the same way: --load-format, --skip-tokenizer-init). */
  load?: import('../../model/types').LoadModelOptions;
  /** Tokens a step computes at most: a draft model catches up on a sequence's tokens within it. */
  maxNumBatchedTokens?: number;
}

export interface ProposerFactory {
  readonly method: SpeculativeMethod;
  create(ctx: ProposerContext): Promise<DraftProposer>;
}
