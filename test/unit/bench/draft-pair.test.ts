// The benchmark's draft / target pair behaves as a model family: the target shares the draft's
// tensors, its extra layers only nudge the logits (less the smaller the residual scale), and at
// scale 0 it computes the draft's logits exactly. Checked with the plain reference forward pass.

import { draftPairTensors, type DraftPairShape, type PairModel } from '../../../bench/draft-pair';
import type { ModelWeights, WeightTensor } from '../../../src/model/types';
import { referenceForward } from '../../helpers/reference-forward';

const TINY: DraftPairShape = { hiddenSize: 64, intermediateSize: 128, numHeads: 4, draftLayers: 1, targetLayers: 3, vocabSize: 96, residualScale: 0, seed: 11 };
const TOKENS = [1, 17, 42, 5, 88, 23, 60, 9, 31, 70, 2, 55];

function weightsOf(model: PairModel): ModelWeights {
  const map = new Map<string, WeightTensor>(model.tensors.map((t) => [t.name, { kind: 'f32', shape: t.shape, data: t.values() }]));
  return { names: () => [...map.keys()], has: (n) => map.has(n), get: (n) => map.get(n)! };
}

function logits(model: PairModel): Float32Array[] {
  return referenceForward(model.config, weightsOf(model), TOKENS);
}

const argmax = (row: Float32Array) => row.reduce((best, v, i) => (v > row[best] ? i : best), 0);

/** Mean over positions of |target - draft| / |draft| (L2), and how many greedy tokens agree. */
function compare(scale: number): { relative: number; agree: number } {
  const { draft, target } = draftPairTensors({ ...TINY, residualScale: scale });
  const d = logits(draft);
  const t = logits(target);
  let relative = 0;
  let agree = 0;
  d.forEach((row, p) => {
    let diff = 0;
    let norm = 0;
    row.forEach((v, i) => {
      diff += (t[p][i] - v) ** 2;
      norm += v * v;
    });
    relative += Math.sqrt(diff / norm) / d.length;
    if (argmax(row) === argmax(t[p])) agree++;
  });
  return { relative, agree };
}

describe('draft-pair', () => {
  it('shares every draft tensor with the target, by name and value', () => {
    const { draft, target } = draftPairTensors({ ...TINY, residualScale: 0.1 });
    expect(draft.config.numLayers).toBe(1);
    expect(target.config.numLayers).toBe(3);
    const byName = new Map(target.tensors.map((t) => [t.name, t]));
    for (const t of draft.tensors) {
      expect(byName.get(t.name)!.shape).toEqual(t.shape);
      expect(byName.get(t.name)!.values()).toEqual(t.values());
    }
    expect(draft.tensors.map((t) => t.name)).toEqual(expect.arrayContaining(['model.embed_tokens.weight', 'model.norm.weight', 'lm_head.weight']));
    expect(target.tensors.length).toBeGreaterThan(draft.tensors.length);
  });

  it('scales only the extra layers\' output projections', () => {
    const plain = draftPairTensors({ ...TINY, residualScale: 1 }).target.tensors;
    const scaled = new Map(draftPairTensors({ ...TINY, residualScale: 0.25 }).target.tensors.map((t) => [t.name, t.values()]));
    for (const t of plain) {
      const extra = /layers\.[12]\.(self_attn\.o_proj|mlp\.down_proj)/.test(t.name);
      const want = extra ? t.values().map((v) => v * 0.25) : t.values();
      expect(scaled.get(t.name)).toEqual(want);
    }
  });

  it('at scale 0 the target computes the draft\'s logits', () => {
    expect(compare(0)).toEqual({ relative: 0, agree: TOKENS.length });
  });

  it('small scales nudge the logits, larger ones move them further', () => {
    const small = compare(0.05);
    const large = compare(1);
    expect(small.relative).toBeGreaterThan(0);
    expect(small.relative).toBeLessThan(0.1);
    expect(large.relative).toBeGreaterThan(3 * small.relative);
    expect(small.agree).toBeGreaterThanOrEqual(TOKENS.length - 2);
  });
});
