// Temperature and the probability filters of random sampling, in vLLM v1's order:
// temperature → min_p (argmax-invariant logits processor) → top_k → top_p. The result is
// an unnormalised distribution in ws.weights (0 = filtered out), ready for one draw.
//
// top_k keeps every token whose value ties the k-th largest (vLLM masks `< kth`);
// top_p keeps the smallest top set whose mass reaches p, i.e. a token survives when the
// mass strictly above it is below p (vLLM: ascending cumsum <= 1 - p is removed).

import type { SamplingParams } from '../types';
import { kthLargestSmall, selectThresholdIndex, SMALL_K } from './threshold-select';
import type { SamplingWorkspace } from './workspace';
import { expNonPositive } from './fast-exp';

/**
 * Turns processed logits in ws.scores[0..V) into sampling weights in ws.weights[0..V)
 * (ws.scores ends up temperature-scaled and filtered). Returns the total weight
 * (0 when every token was banned).
 */
export function computeSamplingWeights(
  ws: SamplingWorkspace,
  V: number,
  p: Pick<SamplingParams, 'temperature' | 'min_p' | 'top_k' | 'top_p'>,
): number {
  const scores = ws.scores;
  const invT = 1 / p.temperature;
  let max = -Infinity;
  for (let i = 0; i < V; i++) {
    scores[i] *= invT;
    // Compare the float32 value as stored, not the float64 product: otherwise the top token
    // can fall a rounding step below `max` and min_p = 1 would filter out every token.
    if (scores[i] > max) max = scores[i];
  }
  const weights = ws.weights;
  if (max === -Infinity) {
    weights.fill(0, 0, V);
    return 0;
  }

  if (p.min_p > 0) {
    // p_i >= min_p * p_max  <=>  s_i >= max + log(min_p)
    const cut = max + Math.log(p.min_p);
    for (let i = 0; i < V; i++) if (scores[i] < cut) scores[i] = -Infinity;
  }

  if (p.top_k > 0 && p.top_k < V) {
    let kth = -Infinity;
    if (p.top_k <= SMALL_K) {
      kth = kthLargestSmall(scores, V, p.top_k, ws);
    } else {
      const at = selectThresholdIndex(ws.scoreBits, V, null, p.top_k, ws);
      if (at >= 0) kth = scores[at];
    }
    if (kth > -Infinity) for (let i = 0; i < V; i++) if (scores[i] < kth) scores[i] = -Infinity;
  }

  let total = 0;
  if (p.top_p >= 1) {
    for (let i = 0; i < V; i++) {
      const w = expNonPositive(scores[i] - max);
      weights[i] = w;
      total += w;
    }
    return total;
  }

  // top_p. A kept token has less than p of the mass above it, so more than (1 - p) of the
  // mass at or below it: w * V > (1 - p) * total >= 1 - p (the top token weighs 1). Tokens
  // under that bound can never survive; collecting the others while exponentiating lets
  // the threshold search skip most of a peaked vocabulary.
  const bound = (0.5 * (1 - p.top_p)) / V; // half: a margin for float32 rounding
  const cand = ws.candidates;
  let numCand = 0;
  for (let i = 0; i < V; i++) {
    const w = expNonPositive(scores[i] - max);
    weights[i] = w;
    total += w;
    if (w > bound) cand[numCand++] = i;
  }
  const at = selectThresholdIndex(ws.weightBits, V, weights, p.top_p * total, ws, numCand);
  if (at >= 0) {
    const cut = weights[at];
    total = 0;
    for (let i = 0; i < V; i++) {
      if (weights[i] < cut) weights[i] = 0;
      else total += weights[i];
    }
  }
  return total;
}
