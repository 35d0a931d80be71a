// Text of a generate response's token ids, as the generating server would have written it:
// the engine's own IncrementalDetokenizer, seeded with the prompt tail (so SentencePiece's
// leading space survives), honouring the original request's skip_special_tokens,
// spaces_between_special_tokens, stop strings and stop tokens.

import { IncrementalDetokenizer } from '../../engine/detokenizer';
import { defaultSamplingParams } from '../../engine/sampling-params';
import type { SamplingParams } from '../../engine/types';
import type { Tokenizer } from '../../model/types';
import type { SamplingRequestFields } from '../sampling-request';

/** How many prompt ids seed the detokenizer (vLLM reads only the last few as well). */
const PROMPT_SEED_TOKENS = 8;

/** The detokenization-related fields of the original completion / chat request. */
export function detokenizeParams(request: SamplingRequestFields | null | undefined): SamplingParams {
  const params = defaultSamplingParams();
  if (!request) return params;
  const stop = request.stop;
  params.stop = stop == null ? [] : typeof stop === 'string' ? [stop] : [...stop];
  params.stop_token_ids = request.stop_token_ids ?? [];
  params.include_stop_str_in_output = request.include_stop_str_in_output ?? false;
  params.skip_special_tokens = request.skip_special_tokens ?? true;
  params.spaces_between_special_tokens = request.spaces_between_special_tokens ?? true;
  params.min_tokens = request.min_tokens ?? 0;
  return params;
}

export interface ReplayInput {
  tokenizer: Tokenizer;
  params: SamplingParams;
  promptTokenIds: readonly number[] | null;
  eosTokenIds: readonly number[];
}

export class ReplayDetokenizer {
  private readonly detokenizer: IncrementalDetokenizer;
  private numTokens = 0;

  constructor(private readonly input: ReplayInput) {
    const seed = (input.promptTokenIds ?? []).slice(-PROMPT_SEED_TOKENS);
    this.detokenizer = new IncrementalDetokenizer(input.tokenizer, input.params, seed);
  }

  /**
   * Feeds output tokens. `finishReason` of the last one: a 'stop' that ended on EOS or a stop
   * token id leaves that token's text out, as the engine does.
   */
  add(tokenIds: readonly number[], finishReason: string | null): void {
    const last = tokenIds[tokenIds.length - 1];
    const { params, eosTokenIds } = this.input;
    const stopToken =
      finishReason === 'stop' &&
      last !== undefined &&
      (params.stop_token_ids.includes(last) || (!params.ignore_eos && eosTokenIds.includes(last)));
    this.numTokens += tokenIds.length;
    this.detokenizer.update(tokenIds, stopToken);
  }

  /** All text so far; while unfinished a possible partial stop string is held back. */
  text(finished: boolean): string {
    return this.detokenizer.getNextOutputText(finished, false);
  }
}
