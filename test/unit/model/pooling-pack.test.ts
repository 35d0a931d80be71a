// How the pooling runner cuts one step's sequences into padded runs: every sequence exactly once,
// equal lengths together, and the cheapest cuts under runCost within the positions cap (checked
// against trying every cut of the sorted lengths).
import { maxRunPositions, packGroups, runCost } from '../../../src/model/runner/pooling-runner';

const HIDDEN = 384;
const batchOf = (lengths: number[]) => lengths.map((n) => ({ tokens: Array.from({ length: n }, (_, i) => i + 1) }));

/** What a grouping costs: each group runs padded to its longest member. */
function costOf(lengths: number[], groups: number[][]): number {
  return groups.reduce((sum, g) => sum + runCost(g.length, Math.max(...g.map((i) => lengths[i])), HIDDEN), 0);
}

/** The least cost over every way of cutting the sorted lengths into contiguous groups of at most `cap` padded positions (or one sequence). */
function bruteForceLeast(lengths: number[], cap = Infinity): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let least = Infinity;
  for (let mask = 0; mask < 1 << (sorted.length - 1); mask++) {
    let cost = 0;
    let start = 0;
    for (let i = 1; i <= sorted.length; i++) {
      if (i === sorted.length || mask & (1 << (i - 1))) {
        cost += i - start > 1 && (i - start) * sorted[i - 1] > cap ? Infinity : runCost(i - start, sorted[i - 1], HIDDEN);
        start = i;
      }
    }
    least = Math.min(least, cost);
  }
  return least;
}

function random(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

describe('packGroups', () => {
  it('runs equal lengths as one padded run', () => {
    expect(packGroups(batchOf([16, 16, 16, 16]), HIDDEN)).toEqual([[0, 1, 2, 3]]);
  });

  it('keeps a long sequence away from short ones, and short ones of close lengths together', () => {
    expect(packGroups(batchOf([500, 3, 4, 5]), HIDDEN)).toEqual([[1, 2, 3], [0]]);
    expect(packGroups(batchOf([12, 10, 11]), HIDDEN)).toEqual([[1, 2, 0]]);
  });

  it('uses every sequence exactly once, groups in ascending length', () => {
    const next = random(7);
    const lengths = Array.from({ length: 100 }, () => 1 + Math.floor(next() * 300));
    const groups = packGroups(batchOf(lengths), HIDDEN);
    expect(groups.flat().sort((a, b) => a - b)).toEqual(lengths.map((_, i) => i));
    const spans = groups.map((g) => [Math.min(...g.map((i) => lengths[i])), Math.max(...g.map((i) => lengths[i]))]);
    spans.slice(1).forEach(([low], k) => expect(low).toBeGreaterThanOrEqual(spans[k][1]));
  });

  it('finds the cheapest cuts (every cut of up to 10 sorted lengths tried)', () => {
    const next = random(42);
    for (let trial = 0; trial < 200; trial++) {
      const lengths = Array.from({ length: 1 + Math.floor(next() * 10) }, () => 1 + Math.floor(next() * (trial % 2 ? 40 : 600)));
      expect(costOf(lengths, packGroups(batchOf(lengths), HIDDEN))).toBeCloseTo(bruteForceLeast(lengths), 6);
    }
  });

  it('keeps runs of several sequences within maxPositions, the cheapest such cuts (brute force up to 10)', () => {
    expect(packGroups(batchOf(Array(8).fill(128)), HIDDEN, 512)).toEqual([[0, 1, 2, 3], [4, 5, 6, 7]]);
    expect(packGroups(batchOf([600, 700, 16]), HIDDEN, 512)).toEqual([[2], [0], [1]]); // one sequence over the cap still runs
    const next = random(99);
    for (let trial = 0; trial < 200; trial++) {
      const lengths = Array.from({ length: 1 + Math.floor(next() * 10) }, () => 1 + Math.floor(next() * 200));
      const groups = packGroups(batchOf(lengths), HIDDEN, 256);
      groups.filter((g) => g.length > 1).forEach((g) => expect(g.length * Math.max(...g.map((i) => lengths[i]))).toBeLessThanOrEqual(256));
      expect(costOf(lengths, groups)).toBeCloseTo(bruteForceLeast(lengths, 256), 6);
    }
  });

  it('caps a MiniLM-shaped run (intermediate 1536) at 512 positions, wider models at fewer', () => {
    expect(maxRunPositions(1536)).toBe(512);
    expect(maxRunPositions(3072)).toBe(256);
    expect(maxRunPositions(1 << 20)).toBe(64);
  });

  it('prices a run: a fixed part, then each padded position, attention growing with the length', () => {
    expect(runCost(1, 1, HIDDEN)).toBeGreaterThan(10 * (runCost(2, 1, HIDDEN) - runCost(1, 1, HIDDEN)));
    expect(runCost(4, 16, HIDDEN) - runCost(2, 16, HIDDEN)).toBeCloseTo(2 * (runCost(2, 16, HIDDEN) - runCost(1, 16, HIDDEN)), 9);
    expect(runCost(1, 1024, HIDDEN) / 1024).toBeGreaterThan(runCost(1, 128, HIDDEN) / 128);
  });
});
