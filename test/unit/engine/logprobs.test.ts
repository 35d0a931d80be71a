// Logprobs are taken on the RAW logits (vLLM raw_logprobs): checked against a brute-force
// log_softmax and a full sort, whatever the penalties / temperature / filters do.
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import {
  positionLogprobs,
  promptLogprobsForRows,
  Rng,
  SamplingWorkspace,
  SequenceSampler,
  topKIndices,
} from '../../../src/engine/sampling';
import type { SamplingParams } from '../../../src/engine/types';

const V = 300;
const ws = new SamplingWorkspace(V);

function logSoftmax(row: ArrayLike<number>): number[] {
  const max = Math.max(...Array.from(row));
  const z = Array.from(row).reduce((a, x) => a + Math.exp(x - max), 0);
  return Array.from(row, (x) => x - max - Math.log(z));
}

function randomRow(rng: Rng): Float32Array {
  return Float32Array.from({ length: V }, () => (rng.nextDouble() - 0.5) * 10);
}

function make(partial: Partial<SamplingParams>): SequenceSampler {
  return new SequenceSampler({
    params: normalizeSamplingParams(partial),
    promptTokenIds: [4, 5],
    vocabSize: V,
    eosTokenIds: [0],
    seed: 11,
  });
}

describe('sample logprobs', () => {
  it('chosen logprob, rank and top-k match brute force on the raw distribution', () => {
    const rng = new Rng(3);
    // Heavy processing: the logprobs must still be the raw ones.
    const s = make({ logprobs: 5, temperature: 0.6, top_k: 20, repetition_penalty: 1.8, presence_penalty: 1, logit_bias: { '9': 5 } });
    let cumulative = 0;
    for (let step = 0; step < 10; step++) {
      const row = randomRow(rng);
      const ref = logSoftmax(row);
      const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => ref[b] - ref[a]);
      const { tokenId, logprob, logprobs } = s.sample(row, 0, ws);
      expect(logprobs).not.toBeNull();
      expect(logprobs!.chosen.tokenId).toBe(tokenId);
      expect(logprob).toBeCloseTo(ref[tokenId], 5);
      expect(logprobs!.chosen.rank).toBe(order.indexOf(tokenId) + 1);
      expect(logprobs!.top.map((t) => t.tokenId)).toEqual(order.slice(0, 5));
      expect(logprobs!.top.map((t) => t.rank)).toEqual([1, 2, 3, 4, 5]);
      logprobs!.top.forEach((t) => expect(t.logprob).toBeCloseTo(ref[t.tokenId], 5));
      cumulative += ref[tokenId];
    }
    expect(s.cumulativeLogprob).toBeCloseTo(cumulative, 4);
  });

  it('logprobs=0 gives only the chosen token; null gives none and no cumulative logprob', () => {
    const row = randomRow(new Rng(4));
    const zero = make({ logprobs: 0 }).sample(row, 0, ws);
    expect(zero.logprobs!.top).toEqual([]);
    const none = make({});
    const r = none.sample(row, 0, ws);
    expect(r.logprobs).toBeNull();
    expect(Number.isNaN(r.logprob)).toBe(true);
    expect(none.cumulativeLogprob).toBeNull();
  });

  it('logprobs=-1 lists the whole vocabulary in rank order', () => {
    const row = randomRow(new Rng(5));
    const { logprobs } = make({ logprobs: -1, temperature: 0 }).sample(row, 0, ws);
    expect(logprobs!.top).toHaveLength(V);
    const ref = logSoftmax(row);
    for (let i = 1; i < V; i++) expect(logprobs!.top[i - 1].logprob).toBeGreaterThanOrEqual(logprobs!.top[i].logprob);
    const total = logprobs!.top.reduce((a, t) => a + Math.exp(t.logprob), 0);
    expect(total).toBeCloseTo(1, 5);
    expect(logprobs!.top[0].logprob).toBeCloseTo(Math.max(...ref), 5);
  });

  it('logprob_token_ids reports exactly those ids with their true ranks', () => {
    const row = randomRow(new Rng(6));
    const ref = logSoftmax(row);
    const { logprobs } = make({ logprob_token_ids: [7, 0, 299] }).sample(row, 0, ws);
    expect(logprobs!.top.map((t) => t.tokenId)).toEqual([7, 0, 299]);
    for (const t of logprobs!.top) {
      expect(t.logprob).toBeCloseTo(ref[t.tokenId], 5);
      expect(t.rank).toBe(1 + ref.filter((x) => x > ref[t.tokenId]).length);
    }
  });

  it('ties do not push a token down: rank counts strictly larger logprobs', () => {
    const row = new Float32Array([1, 5, 5, 2]);
    const lp = positionLogprobs(row, 0, 4, 2, { numTop: 2, tokenIds: null });
    expect(lp.chosen.rank).toBe(1);
    expect(lp.top.map((t) => t.tokenId)).toEqual([1, 2]);
  });

  it('topKIndices matches a full sort', () => {
    const rng = new Rng(8);
    const row = randomRow(rng);
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => row[b] - row[a] || a - b);
    for (const k of [1, 3, 20, V]) expect(topKIndices(row, 0, V, k)).toEqual(order.slice(0, k));
  });
});

describe('prompt logprobs', () => {
  it('row r scores prompt token firstPosition + r + 1, stopping at the prompt end', () => {
    const rng = new Rng(9);
    const prompt = [3, 17, 250, 8, 99];
    const rows = 3;
    const all = new Float32Array(rows * V);
    for (let i = 0; i < all.length; i++) all[i] = (rng.nextDouble() - 0.5) * 6;
    // A chunk covering positions 2..4: rows predict tokens at 3 and 4; the last row predicts output.
    const out = promptLogprobsForRows(all, V, prompt, 2, rows, { numTop: 2, tokenIds: null });
    expect(out).toHaveLength(2);
    out.forEach((entry, r) => {
      const ref = logSoftmax(all.subarray(r * V, (r + 1) * V));
      expect(entry.chosen.tokenId).toBe(prompt[2 + r + 1]);
      expect(entry.chosen.logprob).toBeCloseTo(ref[prompt[2 + r + 1]], 5);
      expect(entry.top).toHaveLength(2);
    });
  });
});
