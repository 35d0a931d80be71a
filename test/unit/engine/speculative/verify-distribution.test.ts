// Rejection sampling keeps the target distribution: over many seeds, the two tokens a sequence
// keeps when a step verifies two drafts (SequenceSampler.verify, then sample() where the first
// draft was replaced, as the engine's next step) follow the same joint distribution as two plain
// samples, with every processor that runs before verify. A chi-square test compares the counts
// with the exact joint distribution; the same test is run on wrong rules to show that, at this
// number of draws, it rejects them beyond any chance.

import { normalizeSamplingParams } from '../../../../src/engine/sampling-params';
import { computeSamplingWeights, Rng, SamplingWorkspace, SequenceSampler } from '../../../../src/engine/sampling';
import type { SamplingParams } from '../../../../src/engine/types';

const V = 8;
const EOS = 0;
const PROMPT = [1, 2, 6];
/** Tokens already generated before the step (forced), so penalties and min_tokens have a history. */
const HISTORY = [2, 4];
const DRAWS = 20_000;
const ws = new SamplingWorkspace(V);

/** Logits of the two verified positions: a spread distribution so that every rule matters. */
const ROW0 = Float32Array.from([0.3, 1.2, 0.1, 0.9, 1.0, -0.4, 0.6, 0.2]);
const ROW1 = Float32Array.from([0.5, -0.2, 1.1, 0.4, 0.8, 1.3, 0.0, 0.7]);

interface Case {
  name: string;
  params: Partial<SamplingParams>;
  badWords?: number[][];
  /** The two drafted tokens. */
  drafts: [number, number];
  /** Also run the wrong rules on this case (its drafts are the most likely tokens, so each wrong rule shows). */
  selfCheck?: boolean;
}

const CASES: Case[] = [
  { name: 'temperature alone', params: { temperature: 0.9 }, drafts: [1, 5], selfCheck: true },
  { name: 'top_k', params: { temperature: 1.1, top_k: 4 }, drafts: [1, 5] },
  { name: 'top_k with a draft it filters out', params: { temperature: 1, top_k: 3 }, drafts: [7, 2] },
  { name: 'top_p', params: { temperature: 0.8, top_p: 0.7 }, drafts: [4, 2] },
  { name: 'min_p', params: { temperature: 1, min_p: 0.3 }, drafts: [3, 7] },
  { name: 'repetition, frequency and presence penalties', params: { temperature: 1, repetition_penalty: 1.6, frequency_penalty: 0.7, presence_penalty: 0.5 }, drafts: [1, 2] },
  { name: 'logit_bias', params: { temperature: 1, logit_bias: { '3': 1.5, '1': -100 } }, drafts: [3, 4] },
  { name: 'min_tokens (EOS banned)', params: { temperature: 1.2, min_tokens: 4 }, drafts: [0, 0] },
  { name: 'bad_words (a two-token word after the first token)', params: { temperature: 1, bad_words: ['w', 'x'] }, badWords: [[3, 5], [6]], drafts: [3, 5] },
  {
    name: 'everything together',
    params: { temperature: 0.7, top_k: 6, top_p: 0.95, min_p: 0.05, repetition_penalty: 1.2, frequency_penalty: 0.3, presence_penalty: 0.2, logit_bias: { '5': 0.8 }, min_tokens: 3 },
    badWords: [[1, 5]],
    drafts: [1, 5],
    selfCheck: true,
  },
];

function sampler(c: Case, seed: number): SequenceSampler {
  return new SequenceSampler({
    params: normalizeSamplingParams(c.params),
    promptTokenIds: PROMPT,
    vocabSize: V,
    eosTokenIds: [EOS],
    badWordsTokenIds: c.badWords,
    seed,
  });
}

/** A row that leaves only `token` possible: forces the history whatever the processors do to other tokens. */
function only(token: number): Float32Array {
  const row = new Float32Array(V).fill(-Infinity);
  row[token] = 0;
  return row;
}

function withHistory(c: Case, seed: number, extra: readonly number[] = []): SequenceSampler {
  const s = sampler(c, seed);
  for (const t of [...HISTORY, ...extra]) {
    if (s.sample(only(t), 0, ws).tokenId !== t) throw new Error(`history token ${t} was not kept`);
  }
  return s;
}

/** The exact distribution the sampler draws from at `row` (processors, temperature, filters), normalised. */
function distribution(s: SequenceSampler, row: Float32Array): number[] {
  ws.scores.set(row);
  s.applyLogitsProcessors(ws.scores);
  const total = computeSamplingWeights(ws, V, s.params);
  return Array.from(ws.weights.subarray(0, V), (w) => w / total);
}

interface Target {
  p0: number[];
  /** p1[t0]: the second position's distribution after t0 was kept (penalties and bad words see it). */
  p1: number[][];
  /** The second position's distribution as if t0 had not been recorded (for a wrong rule). */
  p1Stale: number[];
}

function target(c: Case): Target {
  const p0 = distribution(withHistory(c, 0), ROW0);
  const p1 = p0.map((p, t0) => (p > 0 ? distribution(withHistory(c, 0, [t0]), ROW1) : new Array<number>(V).fill(0)));
  return { p0, p1, p1Stale: distribution(withHistory(c, 0), ROW1) };
}

type Pair = [number, number];

/** The engine's path: verify the first draft; if kept, verify the second; else the next step samples. */
function speculative(c: Case, seed: number): Pair {
  const s = withHistory(c, seed);
  const r0 = s.verify(ROW0, 0, c.drafts[0], ws);
  if (!r0.accepted) return [r0.tokenId, s.sample(ROW1, 0, ws).tokenId];
  return [r0.tokenId, s.verify(ROW1, 0, c.drafts[1], ws).tokenId];
}

function plain(c: Case, seed: number): Pair {
  const s = withHistory(c, seed);
  return [s.sample(ROW0, 0, ws).tokenId, s.sample(ROW1, 0, ws).tokenId];
}

function draw(p: readonly number[], rng: Rng, except = -1): number {
  const mass = p.reduce((a, b, i) => a + (i === except ? 0 : b), 0);
  let u = rng.nextDouble() * mass;
  let last = -1;
  for (let i = 0; i < p.length; i++) {
    if (i === except || p[i] === 0) continue;
    last = i;
    u -= p[i];
    if (u < 0) return i;
  }
  return last;
}

/** One position under a rule: returns the kept token and whether the draft was kept. */
type Rule = (p: readonly number[], d: number, rng: Rng) => { token: number; accepted: boolean };

const WRONG_RULES: Record<string, Rule> = {
  'always keep the draft': (_p, d) => ({ token: d, accepted: true }),
  'keep with p(d), else draw from the whole of p': (p, d, rng) =>
    rng.nextDouble() < p[d] ? { token: d, accepted: true } : { token: draw(p, rng), accepted: false },
  'keep the draft when it is the most likely token, else draw': (p, d, rng) =>
    p[d] === Math.max(...p) ? { token: d, accepted: true } : { token: draw(p, rng), accepted: false },
  'keep with p(d)^2, else draw without d': (p, d, rng) =>
    rng.nextDouble() < p[d] * p[d] ? { token: d, accepted: true } : { token: draw(p, rng, d), accepted: false },
};

/** The right rule on exact tables, with the second position's table chosen by `second`. */
function simulate(t: Target, c: Case, rule: Rule, seed: number, second: (t0: number) => readonly number[]): Pair {
  const rng = new Rng(seed);
  const r0 = rule(t.p0, c.drafts[0], rng);
  const p1 = second(r0.token);
  if (!r0.accepted) return [r0.token, draw(p1, rng)];
  return [r0.token, rule(p1, c.drafts[1], rng).token];
}

const rightRule: Rule = (p, d, rng) => (rng.nextDouble() < p[d] ? { token: d, accepted: true } : { token: draw(p, rng, d), accepted: false });

/** Pearson's statistic of the counts against the exact joint distribution; cells expected below 5 are pooled. */
function chiSquare(pairs: readonly Pair[], t: Target): { stat: number; df: number } {
  const counts = new Map<number, number>();
  for (const [a, b] of pairs) counts.set(a * V + b, (counts.get(a * V + b) ?? 0) + 1);
  let stat = 0;
  let cells = 0;
  let pooledExpected = 0;
  let pooledObserved = 0;
  for (let a = 0; a < V; a++) {
    for (let b = 0; b < V; b++) {
      const expected = t.p0[a] * t.p1[a][b] * pairs.length;
      const observed = counts.get(a * V + b) ?? 0;
      if (expected === 0 && observed > 0) return { stat: Infinity, df: 1 }; // a token that cannot occur
      if (expected < 5) {
        pooledExpected += expected;
        pooledObserved += observed;
        continue;
      }
      stat += (observed - expected) ** 2 / expected;
      cells++;
    }
  }
  if (pooledExpected > 0) {
    stat += (pooledObserved - pooledExpected) ** 2 / Math.max(pooledExpected, 1e-9);
    cells++;
  }
  return { stat, df: cells - 1 };
}

/** Upper quantile of chi-square with `df` degrees of freedom at normal deviate z (Wilson–Hilferty). */
function chiSquareQuantile(df: number, z: number): number {
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

/** z for a 1e-4 tail: what the right rule must stay under (the seeds are fixed, so the result never varies). */
const Z_PASS = 3.72;
/** z for a 1e-12 tail: what every wrong rule must exceed. */
const Z_WRONG = 7.03;

const seeds = Array.from({ length: DRAWS }, (_, i) => 1000 + i);

describe('SequenceSampler.verify keeps the target distribution', () => {
  it.each(CASES)('$name', (c) => {
    const t = target(c);
    // The case exercises rejection: the first draft is neither certain nor (except on purpose) impossible.
    expect(t.p0[c.drafts[0]]).toBeLessThan(0.9);

    const spec = chiSquare(seeds.map((seed) => speculative(c, seed)), t);
    const base = chiSquare(seeds.map((seed) => plain(c, seed)), t);
    expect(spec.stat).toBeLessThan(chiSquareQuantile(spec.df, Z_PASS));
    expect(base.stat).toBeLessThan(chiSquareQuantile(base.df, Z_PASS));

  });

  it.each(CASES.filter((c) => c.selfCheck))('the test rejects wrong rules: $name', (c) => {
    const t = target(c);
    const right = chiSquare(seeds.map((seed) => simulate(t, c, rightRule, seed, (t0) => t.p1[t0])), t);
    expect(right.stat).toBeLessThan(chiSquareQuantile(right.df, Z_PASS));
    for (const [name, rule] of Object.entries(WRONG_RULES)) {
      const wrong = chiSquare(seeds.map((seed) => simulate(t, c, rule, seed, (t0) => t.p1[t0])), t);
      expect({ name, rejected: wrong.stat > chiSquareQuantile(wrong.df, Z_WRONG) }).toEqual({ name, rejected: true });
    }
  });

  it('a rule whose next position ignores the kept draft (penalties, bad words) is rejected', () => {
    for (const c of CASES.filter((x) => x.name.startsWith('repetition') || x.name.startsWith('bad_words'))) {
      const t = target(c);
      const stale = chiSquare(seeds.map((seed) => simulate(t, c, rightRule, seed, () => t.p1Stale)), t);
      expect({ name: c.name, rejected: stale.stat > chiSquareQuantile(stale.df, Z_WRONG) }).toEqual({ name: c.name, rejected: true });
    }
  });

  it('never keeps a draft the filters rule out', () => {
    const c = CASES[2];
    expect(target(c).p0[c.drafts[0]]).toBe(0);
    for (const seed of seeds.slice(0, 2000)) expect(speculative(c, seed)[0]).not.toBe(c.drafts[0]);
  });
});
