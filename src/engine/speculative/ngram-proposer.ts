// Prompt lookup (vLLM's "ngram" method): the longest suffix of the sequence, between
// prompt_lookup_min and prompt_lookup_max tokens, that occurred earlier in the prompt or the
// output; the tokens that followed its latest earlier occurrence are the drafts. Pays off where
// the output copies spans of its context (summaries, edits, code), and costs a scan otherwise.

import type { DraftProposer, DraftRequest, ProposerFactory } from './proposer';

export class NgramProposer implements DraftProposer {
  constructor(
    private readonly minN: number,
    private readonly maxN: number,
  ) {}

  propose(requests: readonly DraftRequest[]): number[][] {
    return requests.map((r) => lookupDrafts(r.tokenIds, this.minN, this.maxN, r.maxDrafts));
  }

  release(): void {}

  dispose(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The drafts for `tokens`: for n from maxN down to minN, the latest earlier occurrence of the
 * last n tokens, and up to maxDrafts tokens after it. Empty when no suffix recurs.
 */
export function lookupDrafts(tokens: readonly number[], minN: number, maxN: number, maxDrafts: number): number[] {
  const len = tokens.length;
  if (maxDrafts <= 0) return [];
  for (let n = Math.min(maxN, len - 1); n >= minN; n--) {
    const suffixStart = len - n;
    // Latest start first; an occurrence must end before the suffix itself starts to end.
    for (let start = suffixStart - 1; start >= 0; start--) {
      let j = 0;
      while (j < n && tokens[start + j] === tokens[suffixStart + j]) j++;
      if (j < n) continue;
      const from = start + n;
      return tokens.slice(from, Math.min(from + maxDrafts, len));
    }
  }
  return [];
}

export const NGRAM_PROPOSER: ProposerFactory = {
  method: 'ngram',
  create: ({ config }) => Promise.resolve(new NgramProposer(config.promptLookupMin, config.promptLookupMax)),
};
