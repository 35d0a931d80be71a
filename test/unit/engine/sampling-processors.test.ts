// Each logits processor on hand-made logits: every test fails if its field were ignored.
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import { SamplingWorkspace, SequenceSampler, type SequenceSamplerInit } from '../../../src/engine/sampling';
import type { SamplingParams } from '../../../src/engine/types';

const V = 8;
const EOS = 2;
const ws = new SamplingWorkspace(V);

function sampler(partial: Partial<SamplingParams>, init: Partial<SequenceSamplerInit> = {}): SequenceSampler {
  return new SequenceSampler({
    params: normalizeSamplingParams({ temperature: 0, ...partial }),
    promptTokenIds: [],
    vocabSize: V,
    eosTokenIds: [EOS],
    seed: 1,
    ...init,
  });
}

/** Logits with a clear order: token 0 best, then 1, 2, ... */
function ranked(): Float32Array {
  return Float32Array.from({ length: V }, (_, i) => 4 - i * 0.5);
}

function processed(s: SequenceSampler, logits: Float32Array): Float32Array {
  const copy = Float32Array.from(logits);
  s.applyLogitsProcessors(copy);
  return copy;
}

describe('logits processors', () => {
  it('greedy picks the argmax, first index on ties, and leaves the input logits untouched', () => {
    const logits = ranked();
    const before = Float32Array.from(logits);
    expect(sampler({}).sample(logits, 0, ws).tokenId).toBe(0);
    expect(logits).toEqual(before);
    const tie = new Float32Array([0, 3, 1, 3, 0, 0, 0, 0]);
    expect(sampler({}).sample(tie, 0, ws).tokenId).toBe(1);
  });

  it('reads the sequence slice at the given offset', () => {
    const batch = new Float32Array(V * 3);
    batch[V * 2 + 5] = 10;
    expect(sampler({}).sample(batch, V * 2, ws).tokenId).toBe(5);
  });

  it('allowed_token_ids masks every other token', () => {
    const s = sampler({ allowed_token_ids: [3, 6] });
    expect(s.sample(ranked(), 0, ws).tokenId).toBe(3);
    const p = processed(s, ranked());
    expect([...p].map((v, i) => (i === 3 || i === 6 ? Number.isFinite(v) : v === -Infinity))).toEqual(Array(V).fill(true));
  });

  it('logit_bias adds to the chosen logits', () => {
    const s = sampler({ logit_bias: { '5': 3, '0': -1 } });
    const p = processed(s, ranked());
    expect(p[5]).toBeCloseTo(4 - 2.5 + 3);
    expect(p[0]).toBeCloseTo(3);
    expect(s.sample(ranked(), 0, ws).tokenId).toBe(5);
  });

  it('bad_words: a one-token word is always banned', () => {
    const s = sampler({ bad_words: ['x'] }, { badWordsTokenIds: [[0]] });
    expect(s.sample(ranked(), 0, ws).tokenId).toBe(1);
  });

  it('bad_words: the last token of a multi-token word is banned only after its prefix', () => {
    // word = [0, 1]: after the output ends with 0, token 1 is banned.
    const s = sampler({ bad_words: ['xy'] }, { badWordsTokenIds: [[0, 1]] });
    const prefer01 = ranked();
    expect(s.sample(prefer01, 0, ws).tokenId).toBe(0); // 1 not banned yet
    const prefer1 = ranked();
    prefer1[1] = 10;
    expect(s.sample(prefer1, 0, ws).tokenId).toBe(0); // 1 is banned right after 0
    expect(processed(s, ranked())[1]).toBe(-Infinity);
    const prefer3 = ranked();
    prefer3[3] = 20;
    expect(s.sample(prefer3, 0, ws).tokenId).toBe(3);
    expect(processed(s, ranked())[1]).toBeCloseTo(3.5); // prefix broken → allowed again
  });

  it('bad_words without token ids is a programming error', () => {
    expect(() => sampler({ bad_words: ['x'] })).toThrow(/badWordsTokenIds/);
  });

  it('min_tokens bans EOS and stop_token_ids until enough tokens were generated', () => {
    const logits = ranked();
    logits[EOS] = 9;
    logits[4] = 8;
    const s = sampler({ min_tokens: 2, stop_token_ids: [4] });
    expect(s.sample(logits, 0, ws).tokenId).toBe(0);
    expect(s.sample(logits, 0, ws).tokenId).toBe(0);
    expect(s.sample(logits, 0, ws).tokenId).toBe(EOS);
  });

  it('min_tokens also bans EOS when ignore_eos is set (vLLM all_stop_token_ids)', () => {
    const logits = ranked();
    logits[EOS] = 9;
    expect(sampler({ min_tokens: 1, ignore_eos: true }).sample(logits, 0, ws).tokenId).toBe(0);
    expect(sampler({ ignore_eos: true }).sample(logits, 0, ws).tokenId).toBe(EOS);
  });

  it('repetition_penalty divides positive and multiplies negative logits of prompt and output tokens', () => {
    const logits = new Float32Array([2, -1, 1.5, 0.5, 0, 0, 0, 0]);
    const s = sampler({ repetition_penalty: 2 }, { promptTokenIds: [0, 1] });
    const p = processed(s, logits);
    expect(p[0]).toBeCloseTo(1);
    expect(p[1]).toBeCloseTo(-2);
    expect(p[2]).toBeCloseTo(1.5);
    expect(s.sample(logits, 0, ws).tokenId).toBe(2); // 0 lost its lead
    expect(processed(s, logits)[2]).toBeCloseTo(0.75); // now an output token too
    expect(sampler({}, { promptTokenIds: [0, 1] }).sample(logits, 0, ws).tokenId).toBe(0);
  });

  it('frequency_penalty subtracts penalty × output count (prompt tokens do not count)', () => {
    const logits = new Float32Array([3, 2.5, 0, 0, 0, 0, 0, 0]);
    const s = sampler({ frequency_penalty: 0.4 }, { promptTokenIds: [1, 1, 1] });
    expect(processed(s, logits)[1]).toBeCloseTo(2.5);
    expect(s.sample(logits, 0, ws).tokenId).toBe(0);
    expect(processed(s, logits)[0]).toBeCloseTo(2.6);
    expect(s.sample(logits, 0, ws).tokenId).toBe(0);
    expect(processed(s, logits)[0]).toBeCloseTo(2.2);
    expect(s.sample(logits, 0, ws).tokenId).toBe(1);
  });

  it('presence_penalty subtracts a flat penalty once a token appeared in the output', () => {
    const logits = new Float32Array([3, 2.5, 0, 0, 0, 0, 0, 0]);
    const s = sampler({ presence_penalty: 0.4 });
    expect(s.sample(logits, 0, ws).tokenId).toBe(0);
    expect(processed(s, logits)[0]).toBeCloseTo(2.6);
    s.sample(logits, 0, ws);
    expect(processed(s, logits)[0]).toBeCloseTo(2.6); // not cumulative
    expect(sampler({ presence_penalty: 0.6 }).sample(logits, 0, ws).tokenId).toBe(0);
    const twice = sampler({ presence_penalty: 0.6 });
    twice.sample(logits, 0, ws);
    expect(twice.sample(logits, 0, ws).tokenId).toBe(1);
  });

  it('records sampled tokens as the output', () => {
    const s = sampler({});
    s.sample(ranked(), 0, ws);
    s.sample(new Float32Array([0, 0, 0, 0, 0, 0, 0, 1]), 0, ws);
    expect(s.outputTokenIds).toEqual([0, 7]);
  });

  it('with every token banned it still returns a token id in range', () => {
    const s = sampler({ temperature: 1, allowed_token_ids: [3] });
    const logits = new Float32Array(V).fill(-Infinity);
    const id = s.sample(logits, 0, ws).tokenId;
    expect(id).toBeGreaterThanOrEqual(0);
    expect(id).toBeLessThan(V);
  });
});
