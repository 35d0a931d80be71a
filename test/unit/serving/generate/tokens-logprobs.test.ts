// GenerateLogProbs (output_mode "tokens"): vLLM's entry order, clamping and rank rules.

import { buildTokensLogprobs } from '../../../../src/serving/generate/tokens-logprobs';

const position = {
  chosen: { tokenId: 7, logprob: -1.5, rank: 3 },
  top: [
    { tokenId: 4, logprob: -0.1, rank: 1 },
    { tokenId: 9, logprob: -0.9, rank: 2 },
    { tokenId: 7, logprob: -1.5, rank: 3 },
  ],
};

describe('buildTokensLogprobs', () => {
  it('lists the sampled token first, then the others by rank, max(k, 1) entries', () => {
    const [entry] = buildTokensLogprobs([position], 2).content;
    expect(entry).toEqual({
      token_id: 7,
      logprob: -1.5,
      rank: 3,
      top_logprobs: [
        { token_id: 7, logprob: -1.5, rank: 3 },
        { token_id: 4, logprob: -0.1, rank: 1 },
      ],
    });
    expect(buildTokensLogprobs([position], 0).content[0].top_logprobs).toEqual([{ token_id: 7, logprob: -1.5, rank: 3 }]);
    expect(buildTokensLogprobs([position], 3).content[0].top_logprobs.map((t) => t.token_id)).toEqual([7, 4, 9]);
  });

  it('sends NaN as -9999.0 with rank null, and -inf as -9999.0', () => {
    const [entry] = buildTokensLogprobs(
      [{ chosen: { tokenId: 1, logprob: Number.NaN, rank: 5 }, top: [{ tokenId: 2, logprob: -Infinity, rank: 1 }] }],
      1,
    ).content;
    expect(entry).toMatchObject({ token_id: 1, logprob: -9999, rank: null });
    expect(JSON.parse(JSON.stringify(entry)).logprob).toBe(-9999);
    expect(buildTokensLogprobs([{ chosen: { tokenId: 2, logprob: -Infinity, rank: 1 }, top: [] }], 0).content[0].logprob).toBe(-9999);
  });
});
