// Logprobs of output_mode "tokens" (vLLM's GenerateLogProbs): integer token ids instead of
// token strings, because a --tokens-only server has no tokenizer to decode them with.

import type { PositionLogprobs, TokenLogprob } from '../../engine/types';
import { clampLogprob } from '../logprobs';

interface GenerateLogProb {
  token_id: number;
  logprob: number;
  /** 1-based rank in the distribution; null when the engine gave none. */
  rank: number | null;
}

interface GenerateLogProbsContent extends GenerateLogProb {
  /** The sampled token first, then the other candidates in rank order. */
  top_logprobs: GenerateLogProb[];
}

export interface GenerateLogProbs {
  content: GenerateLogProbsContent[];
}

function entry(logprob: TokenLogprob): GenerateLogProb {
  return {
    token_id: logprob.tokenId,
    logprob: clampLogprob(logprob.logprob),
    // vLLM sends NaN as -9999.0 with rank null, and a rank of 0 as null.
    rank: Number.isNaN(logprob.logprob) || !logprob.rank ? null : logprob.rank,
  };
}

/**
 * One content entry per generated position. `numTopLogprobs` is sampling_params.logprobs:
 * top_logprobs holds max(k, 1) entries, the sampled token first (as vLLM's dict built from
 * the engine row, where the sampled id comes first and its repeat among the top-k is dropped).
 */
export function buildTokensLogprobs(positions: readonly PositionLogprobs[], numTopLogprobs: number): GenerateLogProbs {
  const limit = Math.max(numTopLogprobs, 1);
  const content = positions.map((position) => {
    const sampled = entry(position.chosen);
    const others = position.top.filter((t) => t.tokenId !== position.chosen.tokenId).map(entry);
    // -1 asks for the whole vocabulary: keep everything the engine returned.
    const top = numTopLogprobs < 0 ? [sampled, ...others] : [sampled, ...others].slice(0, limit);
    return { ...sampled, top_logprobs: top };
  });
  return { content };
}
