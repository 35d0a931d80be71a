// temperature / min_p / top_k / top_p against a brute-force port of vLLM's sort-based
// filters, and the threshold selection against a full sort.
import { computeSamplingWeights, Rng, SamplingWorkspace, selectThresholdIndex } from '../../../src/engine/sampling';
import { kthLargestSmall } from '../../../src/engine/sampling/threshold-select';

interface FilterParams {
  temperature: number;
  min_p: number;
  top_k: number;
  top_p: number;
}

/** vLLM: temperature → min_p → (sort ascending) top-k mask → softmax/cumsum top-p mask. Returns kept probs. */
function bruteForce(logits: Float32Array, p: FilterParams): Float64Array {
  const V = logits.length;
  const s = Array.from(logits, (x) => x / p.temperature);
  const max = Math.max(...s);
  if (p.min_p > 0) {
    const z = s.reduce((a, x) => a + Math.exp(x - max), 0);
    const pmax = 1 / z;
    for (let i = 0; i < V; i++) if (Math.exp(s[i] - max) / z < p.min_p * pmax) s[i] = -Infinity;
  }
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => s[a] - s[b]);
  const sorted = order.map((i) => s[i]);
  if (p.top_k > 0 && p.top_k < V) {
    const kth = sorted[V - p.top_k];
    for (let j = 0; j < V; j++) if (sorted[j] < kth) sorted[j] = -Infinity;
  }
  if (p.top_p < 1) {
    const m = Math.max(...sorted);
    const e = sorted.map((x) => Math.exp(x - m));
    const z = e.reduce((a, x) => a + x, 0);
    let cum = 0;
    const mask = e.map((x) => {
      cum += x / z;
      return cum <= 1 - p.top_p;
    });
    mask[V - 1] = false;
    for (let j = 0; j < V; j++) if (mask[j]) sorted[j] = -Infinity;
  }
  const out = new Float64Array(V);
  const m = Math.max(...sorted);
  let z = 0;
  for (let j = 0; j < V; j++) z += Math.exp(sorted[j] - m);
  for (let j = 0; j < V; j++) out[order[j]] = Math.exp(sorted[j] - m) / z;
  return out;
}

function randomLogits(rng: Rng, V: number, spread: number): Float32Array {
  return Float32Array.from({ length: V }, () => (rng.nextDouble() * 2 - 1) * spread);
}

function ours(logits: Float32Array, p: FilterParams, ws: SamplingWorkspace): Float64Array {
  ws.scores.set(logits);
  const total = computeSamplingWeights(ws, logits.length, p);
  return Float64Array.from(ws.weights.subarray(0, logits.length), (w) => w / total);
}

describe('sampling filters vs brute force', () => {
  const cases: FilterParams[] = [
    { temperature: 1, min_p: 0, top_k: 0, top_p: 1 },
    { temperature: 0.7, min_p: 0, top_k: 1, top_p: 1 },
    { temperature: 1, min_p: 0, top_k: 5, top_p: 1 },
    { temperature: 1.3, min_p: 0, top_k: 100, top_p: 1 },
    { temperature: 1, min_p: 0, top_k: 256, top_p: 1 },
    { temperature: 1, min_p: 0, top_k: 700, top_p: 0.8 },
    { temperature: 1, min_p: 0, top_k: 0, top_p: 0.1 },
    { temperature: 1, min_p: 0, top_k: 0, top_p: 0.5 },
    { temperature: 0.8, min_p: 0, top_k: 0, top_p: 0.95 },
    { temperature: 1, min_p: 0.05, top_k: 0, top_p: 1 },
    { temperature: 0.5, min_p: 0.3, top_k: 0, top_p: 1 },
    { temperature: 1, min_p: 0.01, top_k: 40, top_p: 0.9 },
    { temperature: 1, min_p: 0, top_k: 10, top_p: 0.3 },
  ];

  it.each(cases)('%j keeps the same tokens with the same probabilities', (p) => {
    const rng = new Rng(12345);
    for (const [V, spread] of [
      [50, 3],
      [1000, 8],
      [4096, 2],
      [2048, 15],
    ]) {
      const ws = new SamplingWorkspace(V);
      for (let trial = 0; trial < 4; trial++) {
        const logits = randomLogits(rng, V, spread);
        const expected = bruteForce(logits, p);
        const got = ours(logits, p, ws);
        // One assertion per row: expect() per token is far slower than the filters themselves.
        let keptMismatches = 0;
        let maxError = 0;
        for (let i = 0; i < V; i++) {
          if (got[i] > 0 !== expected[i] > 0) keptMismatches++;
          maxError = Math.max(maxError, Math.abs(got[i] - expected[i]));
        }
        expect({ V, trial, keptMismatches, small: maxError < 1e-5 }).toEqual({ V, trial, keptMismatches: 0, small: true });
      }
    }
  });

  it('top_k keeps ties with the k-th value (vLLM masks only values below it)', () => {
    const ws = new SamplingWorkspace(6);
    const logits = new Float32Array([1, 3, 2, 2, 0, 2]);
    const got = ours(logits, { temperature: 1, min_p: 0, top_k: 2, top_p: 1 }, ws);
    expect(Array.from(got, (x) => x > 0)).toEqual([false, true, true, true, false, true]);
  });

  it('top_p always keeps at least the most likely token', () => {
    const ws = new SamplingWorkspace(4);
    const got = ours(new Float32Array([10, 0, 0, 0]), { temperature: 1, min_p: 0, top_k: 0, top_p: 0.01 }, ws);
    expect(Array.from(got)).toEqual([1, 0, 0, 0]);
  });

  it('min_p = 1 keeps exactly the top token at any temperature', () => {
    // Temperatures whose float32 products round differently from float64 ones.
    const rng = new Rng(7);
    const ws = new SamplingWorkspace(512);
    for (const temperature of [1.5, 1.2, 0.7, 1.3]) {
      const logits = randomLogits(rng, 512, 6);
      let top = 0;
      for (let i = 1; i < 512; i++) if (logits[i] > logits[top]) top = i;
      const got = ours(logits, { temperature, min_p: 1, top_k: 0, top_p: 1 }, ws);
      expect({ temperature, top: got.indexOf(1), kept: got.filter((x) => x > 0).length }).toEqual({ temperature, top, kept: 1 });
    }
  });

  it('temperature rescales logit differences', () => {
    const ws = new SamplingWorkspace(2);
    const got = ours(new Float32Array([1, 0]), { temperature: 0.5, min_p: 0, top_k: 0, top_p: 1 }, ws);
    expect(got[0] / got[1]).toBeCloseTo(Math.exp(2), 4);
    const hot = ours(new Float32Array([1, 0]), { temperature: 2, min_p: 0, top_k: 0, top_p: 1 }, ws);
    expect(hot[0] / hot[1]).toBeCloseTo(Math.exp(0.5), 4);
  });

  it('handles banned (-inf) tokens', () => {
    const ws = new SamplingWorkspace(5);
    const logits = new Float32Array([-Infinity, 1, -Infinity, 0.5, 0.2]);
    const p = { temperature: 1, min_p: 0, top_k: 4, top_p: 0.7 };
    const got = ours(logits, p, ws);
    const expected = bruteForce(logits, p);
    for (let i = 0; i < 5; i++) expect(got[i]).toBeCloseTo(expected[i], 6);
    expect(got[0]).toBe(0);
  });
});

describe('selectThresholdIndex', () => {
  it('finds the k-th largest value like a full sort, with negatives, zeros and ties', () => {
    const rng = new Rng(7);
    const V = 3000;
    const ws = new SamplingWorkspace(V);
    for (let trial = 0; trial < 30; trial++) {
      for (let i = 0; i < V; i++) {
        const r = rng.nextDouble();
        ws.scores[i] = r < 0.1 ? 0 : r < 0.2 ? -0.5 : Math.round((rng.nextDouble() * 2 - 1) * 1000) / 10;
      }
      const sorted = Array.from(ws.scores).sort((a, b) => b - a);
      for (const k of [1, 2, 17, 300, 2999, 3000]) {
        const at = selectThresholdIndex(ws.scoreBits, V, null, k, ws);
        expect(ws.scores[at]).toBe(sorted[k - 1]);
      }
    }
  });
});

describe('kthLargestSmall', () => {
  it('matches a full sort, ignoring NaN, and is -Infinity when fewer than k values exist', () => {
    const rng = new Rng(21);
    const V = 2000;
    const ws = new SamplingWorkspace(V);
    const values = Float32Array.from({ length: V }, () => Math.round((rng.nextDouble() - 0.5) * 200) / 4);
    values[5] = NaN;
    const sorted = Array.from(values).filter((v) => !Number.isNaN(v)).sort((a, b) => b - a);
    for (const k of [1, 2, 50, 255, 256]) expect(kthLargestSmall(values, V, k, ws)).toBe(sorted[k - 1]);
    expect(kthLargestSmall(values, 3, 5, ws)).toBe(-Infinity);
  });
});
