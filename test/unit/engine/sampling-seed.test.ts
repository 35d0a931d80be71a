// Seeded sampling: same seed → same tokens whatever else is in the batch; unseeded
// sequences draw from the global source; draws follow the filtered distribution.
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import { childSeed, Rng, SamplingWorkspace, seedGlobalSampler, SequenceSampler } from '../../../src/engine/sampling';
import type { SamplingParams } from '../../../src/engine/types';

const V = 64;
const ws = new SamplingWorkspace(V);

function make(partial: Partial<SamplingParams>, seed?: number | null): SequenceSampler {
  return new SequenceSampler({
    params: normalizeSamplingParams({ temperature: 1, ...partial }),
    promptTokenIds: [1, 2, 3],
    vocabSize: V,
    eosTokenIds: [],
    ...(seed !== undefined ? { seed } : {}),
  });
}

/** A fixed sequence of per-step logits rows (flat-ish so sampling is really random). */
function stepLogits(steps: number): Float32Array[] {
  const rng = new Rng(99);
  return Array.from({ length: steps }, () => Float32Array.from({ length: V }, () => rng.nextDouble() * 2));
}

function run(s: SequenceSampler, rows: Float32Array[]): number[] {
  return rows.map((row) => s.sample(row, 0, ws).tokenId);
}

describe('seeded sampling', () => {
  const rows = stepLogits(40);

  it('the same seed gives the same tokens; another seed gives others', () => {
    const a = run(make({ seed: 42 }), rows);
    expect(run(make({ seed: 42 }), rows)).toEqual(a);
    expect(run(make({ seed: 43 }), rows)).not.toEqual(a);
    expect(new Set(a).size).toBeGreaterThan(5); // really random, not greedy
  });

  it('does not depend on what else is in the batch', () => {
    const alone = run(make({ seed: 7, top_p: 0.9 }), rows);
    // Same request inside a batch of 4, interleaved with seeded and unseeded neighbours
    // that share one logits buffer and the workspace.
    const batch = [make({ seed: 1 }), make({ seed: 7, top_p: 0.9 }), make({}), make({ seed: 7, top_k: 3 })];
    const tokens: number[] = [];
    for (const row of rows) {
      const flat = new Float32Array(V * batch.length);
      batch.forEach((_, i) => flat.set(i === 1 ? row : row.map((x) => x * (i + 1)), i * V));
      batch.forEach((s, i) => {
        const t = s.sample(flat, i * V, ws).tokenId;
        if (i === 1) tokens.push(t);
      });
    }
    expect(tokens).toEqual(alone);
  });

  it('params.seed is used unless the init overrides it (n > 1 children get seed + index)', () => {
    expect(childSeed(10, 0)).toBe(10);
    expect(childSeed(10, 2)).toBe(12);
    expect(childSeed(null, 2)).toBeNull();
    const viaParams = run(make({ seed: 12 }), rows);
    expect(run(make({ seed: 10 }, childSeed(10, 2)), rows)).toEqual(viaParams);
  });

  it('unseeded sequences differ from each other but replay after re-seeding the global source', () => {
    seedGlobalSampler(5);
    const first = run(make({}), rows);
    const second = run(make({}), rows);
    expect(second).not.toEqual(first);
    seedGlobalSampler(5);
    expect(run(make({}), rows)).toEqual(first);
  });

  it('accepts 64-bit and negative seeds', () => {
    const big = run(make({ seed: 2 ** 63 }), rows);
    expect(run(make({ seed: 2 ** 63 }), rows)).toEqual(big);
    expect(run(make({ seed: -3 }), rows)).toHaveLength(rows.length);
  });

  it('draws follow the distribution (frequencies vs softmax, 20k draws)', () => {
    const logits = new Float32Array(V).fill(-Infinity);
    logits.set([0, Math.log(2), Math.log(3), Math.log(4)]);
    const s = make({ seed: 3 });
    const counts = [0, 0, 0, 0];
    const N = 20000;
    for (let i = 0; i < N; i++) counts[s.sample(logits, 0, ws).tokenId]++;
    [1, 2, 3, 4].forEach((w, i) => expect(Math.abs(counts[i] / N - w / 10)).toBeLessThan(0.015));
  });

  it('Rng doubles are uniform in [0, 1)', () => {
    const rng = new Rng(1);
    let sum = 0;
    let min = 1;
    let max = 0;
    for (let i = 0; i < 100000; i++) {
      const x = rng.nextDouble();
      sum += x;
      min = Math.min(min, x);
      max = Math.max(max, x);
    }
    expect(sum / 100000).toBeCloseTo(0.5, 2);
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
  });
});
