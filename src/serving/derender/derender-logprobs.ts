// GenerateLogProbs (token ids) back to the engine's PositionLogprobs, so the OpenAI logprob
// formatters of src/serving turn them into completion or chat logprobs with token strings.

import { OpenAIHttpError } from '../openai-error';
import type { PositionLogprobs } from '../../engine/types';
import type { GenerateLogProbsInput } from './derender-types';

/** vLLM refuses more top entries than --max-logprobs allows anywhere (20). */
const MAX_TOP_LOGPROBS = 20;

export function positionsFromGenerateLogprobs(logprobs: GenerateLogProbsInput | null | undefined, numTokens: number): PositionLogprobs[] | null {
  const content = logprobs?.content;
  if (!content) return null;
  if (content.length !== numTokens) {
    throw OpenAIHttpError.badRequest(`logprobs.content has ${content.length} entries for ${numTokens} token_ids.`, 'logprobs');
  }
  return content.map((entry) => {
    const top = entry.top_logprobs ?? [];
    if (top.length > MAX_TOP_LOGPROBS) {
      throw OpenAIHttpError.badRequest(`top_logprobs count (${top.length}) exceeds maximum (${MAX_TOP_LOGPROBS}).`, 'logprobs');
    }
    return {
      chosen: { tokenId: entry.token_id, logprob: entry.logprob, rank: entry.rank ?? 0 },
      top: top.map((t) => ({ tokenId: t.token_id, logprob: t.logprob, rank: t.rank ?? 0 })),
    };
  });
}

/** Top entries per position a client asked for, when the original request is not sent: all but the sampled one. */
export function impliedTopCount(positions: readonly PositionLogprobs[]): number {
  return positions.reduce((k, p) => Math.max(k, p.top.filter((t) => t.tokenId !== p.chosen.tokenId).length), 0);
}
