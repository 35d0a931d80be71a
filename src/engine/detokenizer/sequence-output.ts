// Everything that turns one sequence's sampled tokens into CompletionOutput fields:
// token-level stops (StopChecker), incremental text and stop strings
// (IncrementalDetokenizer), and the final flush. A stop string found in the same step
// as a length / repetition finish wins, as in vLLM's output processor.

import type { Tokenizer } from '../../model/types';
import type { FinishReason, SamplingParams } from '../types';
import { IncrementalDetokenizer } from './incremental-detokenizer';
import { StopChecker, type FinishStatus } from './stop-checker';

export interface SequenceOutputInit {
  params: SamplingParams;
  /** null with --skip-tokenizer-init: no text, no stop strings. */
  tokenizer: Tokenizer | null;
  promptTokenIds: readonly number[];
  eosTokenIds: readonly number[];
  /** Output budget: params.max_tokens ?? (maxModelLen - prompt length). */
  maxTokens: number;
  maxModelLen: number;
}

export class SequenceOutputProcessor {
  private readonly ids: number[] = [];
  private readonly stopChecker: StopChecker;
  private readonly detokenizer: IncrementalDetokenizer | null;
  private status: FinishStatus | null = null;

  constructor(init: SequenceOutputInit) {
    this.stopChecker = new StopChecker({
      params: init.params,
      eosTokenIds: init.eosTokenIds,
      promptLength: init.promptTokenIds.length,
      maxTokens: init.maxTokens,
      maxModelLen: init.maxModelLen,
    });
    this.detokenizer =
      init.tokenizer && init.params.detokenize
        ? new IncrementalDetokenizer(init.tokenizer, init.params, init.promptTokenIds)
        : null;
  }

  /** Output token ids so far (every token, including a stop token). */
  get tokenIds(): readonly number[] {
    return this.ids;
  }

  /** Set once the sequence has finished. */
  get finishStatus(): FinishStatus | null {
    return this.status;
  }

  get finished(): boolean {
    return this.status !== null;
  }

  /** Adds one sampled token; returns the finish status when this token ends the sequence. */
  appendToken(tokenId: number): FinishStatus | null {
    if (this.status) throw new Error('SequenceOutputProcessor: token appended after finish');
    this.ids.push(tokenId);
    let status = this.stopChecker.check(this.ids);
    if (this.detokenizer) {
      const stopString = this.detokenizer.update([tokenId], status?.finishReason === 'stop');
      if (stopString !== null) status = { finishReason: 'stop', stopReason: stopString };
    }
    this.status = status;
    return status;
  }

  /** Ends the sequence from outside (abort, error, preempted for good). */
  finish(finishReason: FinishReason, stopReason: string | number | null = null): FinishStatus {
    if (!this.status) this.status = { finishReason, stopReason };
    return this.status;
  }

  /**
   * Text for the next RequestOutput: `delta` = only what was not returned before
   * (output_kind DELTA), else the whole text. While running, a possible partial stop
   * string is held back; once finished everything left is flushed. '' without detokenizer.
   */
  nextText(delta: boolean): string {
    return this.detokenizer ? this.detokenizer.getNextOutputText(this.status !== null, delta) : '';
  }
}
