// What the engine core needs per completion from the sampler and the detokenizer
// (src/engine/sampling/, src/engine/detokenizer/, owned by the sampler engineer), and the
// adapter that builds it from their classes.

import type { Tokenizer } from '../../model/types';
import { SequenceOutputProcessor, type FinishStatus } from '../detokenizer';
import { childSeed, encodeBadWords, logSumExp, promptLogprobsForRows, SamplingWorkspace, SequenceSampler } from '../sampling';
import type { SequenceConstraint } from '../sampling/logits-processor';
import type { EngineRequest, PositionLogprobs } from '../types';
import { TextWatch } from './text-watch';

interface SampledToken {
  tokenId: number;
  /** Raw logprob of the sampled token (cumulative_logprob, best_of ranking). */
  logprob: number;
  /** Present when the request asked for logprobs. */
  logprobs: PositionLogprobs | null;
}

export interface CompletionProcessor {
  /**
   * Work due before the next sample (a grammar bitmask); run while the model computes the logits.
   * `drafts`: the tokens this step verifies after it (the grammar's masks of their positions too).
   */
  prepare(drafts?: readonly number[]): Promise<void> | void;
  /** True while sampling needs a grammar mask (an enabled, unfinished constraint). */
  waitsForMask(): boolean;
  /** Samples (and records) the next token from `logits[offset .. offset + vocab)`, left unchanged. */
  sample(logits: Float32Array, offset: number): SampledToken;
  /**
   * Of the `numDrafts` drafts given to prepare(), how many can be verified: those the grammar
   * accepts in order (vLLM's validate_tokens), all of them without a grammar. Once prepare() is done.
   */
  verifiableDrafts(numDrafts: number): number;
  /**
   * During a draft walk: whether the next position can be verified. Not when the grammar was
   * enabled after prepare() (a reasoning section just ended): no mask was prepared for it.
   */
  canVerifyNext(): boolean;
  /**
   * Speculative decoding: keeps `draftTokenId` or replaces it, from the logits of its position
   * (SequenceSampler.verify), and records the token kept.
   */
  verify(logits: Float32Array, offset: number, draftTokenId: number): SampledToken & { accepted: boolean };
  /** Stop / length / stop-string check for the newest sampled token. */
  appendToken(tokenId: number): FinishStatus | null;
  /**
   * Text safe to show (stop-string hold-back applied until `finished`): all of it so far, or with
   * `delta` only what the previous delta call did not return (DELTA output, no copy of the whole).
   */
  text(finished: boolean, delta: boolean): string;
  /** Frees per-sequence resources (a grammar matcher) once the completion is done. */
  dispose(): void;
}

export interface CompletionProcessorContext {
  vocabSize: number;
  eosTokenIds: readonly number[];
  maxModelLen: number;
  /** null with --skip-tokenizer-init: no text, no stop strings. */
  tokenizer: Tokenizer | null;
}

/** Builds the sampler + stop checker + detokenizer of each completion of a request. */
export class CompletionProcessorFactory {
  private readonly workspace: SamplingWorkspace;

  constructor(private readonly ctx: CompletionProcessorContext) {
    this.workspace = new SamplingWorkspace(ctx.vocabSize);
  }

  /**
   * Throws RequestValidationError (e.g. bad_words that do not encode). `constraint`: the
   * completion's structured-output state, built beforehand (grammar compiled off the step loop).
   */
  create(request: EngineRequest, index: number, maxTokens: number, constraint: SequenceConstraint | null = null): CompletionProcessor {
    const { params, promptTokenIds } = request;
    const { tokenizer, vocabSize, eosTokenIds } = this.ctx;
    const badWords = params.bad_words.length > 0 && tokenizer ? encodeBadWords(params.bad_words, tokenizer) : undefined;
    const sampler = new SequenceSampler({
      params,
      promptTokenIds,
      vocabSize,
      eosTokenIds,
      badWordsTokenIds: badWords,
      seed: childSeed(params.seed, index),
      constraint,
    });
    const output = new SequenceOutputProcessor({ params, tokenizer, promptTokenIds, eosTokenIds, maxTokens, maxModelLen: this.ctx.maxModelLen });
    const marker = request.structuredOutputsAfter;
    const reasoningEnd = constraint && !constraint.enabled && marker && tokenizer ? new TextWatch(tokenizer, marker) : null;
    // Without a tokenizer no text can show the marker: constrain from the start rather than never.
    if (constraint && !constraint.enabled && !reasoningEnd) constraint.enable();
    const workspace = this.workspace;
    // The sampler computes logprobs only when asked; best_of > n still ranks by them.
    const ranksByLogprob = (params.best_of ?? params.n) > params.n;
    const withRankingLogprob = <R extends SampledToken>(result: R, logits: Float32Array, offset: number): R => {
      if (Number.isNaN(result.logprob) && ranksByLogprob) result.logprob = logits[offset + result.tokenId] - logSumExp(logits, offset, vocabSize);
      return result;
    };
    let enabledSincePrepare = false;
    let maskedAtPrepare = false;
    return {
      prepare(drafts) {
        enabledSincePrepare = false;
        maskedAtPrepare = !!constraint && constraint.enabled && !constraint.terminated;
        return constraint?.prepare(drafts);
      },
      waitsForMask() {
        return !!constraint && constraint.enabled && !constraint.terminated;
      },
      sample(logits, offset) {
        // The sampler's own result object (a new one per call), not a copy of it.
        return withRankingLogprob(sampler.sample(logits, offset, workspace), logits, offset);
      },
      verifiableDrafts(numDrafts) {
        return maskedAtPrepare ? Math.min(numDrafts, constraint!.draftsTaken ?? 0) : numDrafts;
      },
      canVerifyNext() {
        return !enabledSincePrepare;
      },
      verify(logits, offset, draftTokenId) {
        return withRankingLogprob(sampler.verify(logits, offset, draftTokenId, workspace), logits, offset);
      },
      appendToken(tokenId) {
        const status = output.appendToken(tokenId);
        // The reasoning section just ended: the grammar applies from the next token on.
        if (reasoningEnd && !constraint!.enabled && reasoningEnd.push(tokenId)) {
          constraint!.enable();
          enabledSincePrepare = true;
        }
        // A finished grammar ends the sequence even where EOS would not (ignore_eos, a stop token the grammar took).
        if (status === null && constraint?.terminated) return output.finish('stop');
        return status;
      },
      text(finished, delta) {
        // A finish decided outside (abort, error) still flushes the held-back text.
        if (finished) output.finish('abort');
        return output.nextText(delta);
      },
      dispose() {
        constraint?.dispose();
      },
    };
  }

  /** Prompt logprobs of positions `firstPosition + 1 ..` from a chunk's per-token logits. */
  promptLogprobs(request: EngineRequest, rows: Float32Array, firstPosition: number, numRows: number): PositionLogprobs[] {
    return promptLogprobsForRows(rows, this.ctx.vocabSize, request.promptTokenIds, firstPosition, numRows, {
      numTop: request.params.prompt_logprobs,
      tokenIds: null,
    });
  }
}
