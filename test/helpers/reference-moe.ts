// A plain float64 reference of the mixture-of-experts feed-forward block (mixtral, qwen3moe), for
// reference-forward.ts's layer loop: router, softmax over every expert, the top k (ties: lowest
// index first), renormalised when the config says so, and the weighted sum of the chosen
// experts' SwiGLU MLPs. Written from the HF modeling code's definition, one token at a time.
import { isMoeLayer, moeWeightNames } from '../../src/model/moe/moe-config';
import type { DecoderArchConfig, ModelArchConfig, ModelWeights } from '../../src/model/types';
import { matVec, referenceForward, swiglu, weight, type ReferenceFeedForward } from './reference-forward';

/** One token's routing: the chosen experts (best first) and their weights. */
export interface Routing {
  experts: number[];
  weights: number[];
}

/** The routing of the normed row `x` by router logits `logits`. */
export function referenceRouting(c: DecoderArchConfig, logits: Float64Array): Routing {
  const max = Math.max(...logits);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const total = exps.reduce((a, b) => a + b, 0);
  const probs = exps.map((v) => v / total);
  const order = probs.map((_, e) => e).sort((a, b) => probs[b] - probs[a] || a - b);
  const experts = order.slice(0, c.numExpertsPerToken);
  let weights = experts.map((e) => probs[e]);
  if (c.normTopKProb) {
    const sum = weights.reduce((a, b) => a + b, 0);
    weights = weights.map((w) => w / sum);
  }
  return { experts, weights };
}

/** The MoE block of every MoE layer of `config`; `seen` collects each layer's routings in call order. */
export function referenceMoe(modelConfig: ModelArchConfig, weights: ModelWeights, seen?: Routing[][]): ReferenceFeedForward {
  const c = modelConfig as DecoderArchConfig;
  const ffn = c.expertIntermediateSize!;
  const h = c.hiddenSize;
  const layers = Array.from({ length: c.numLayers }, (_, l) => {
    if (!isMoeLayer(c, l)) return null;
    const names = moeWeightNames(`model.layers.${l}.`);
    const expert = (name: string, e: number, size: number) => weight(weights, name).subarray(e * size, (e + 1) * size);
    return {
      router: weight(weights, names.router),
      gate: (e: number) => expert(names.gate, e, ffn * h),
      up: (e: number) => expert(names.up, e, ffn * h),
      down: (e: number) => expert(names.down, e, h * ffn),
    };
  });
  return (l, x) => {
    const L = layers[l];
    if (!L) return null;
    const routing = referenceRouting(c, matVec(L.router, x, c.numExperts!));
    if (seen) (seen[l] ??= []).push(routing);
    const out = new Float64Array(h);
    routing.experts.forEach((e, i) => {
      const y = swiglu(L.gate(e), L.up(e), L.down(e), x, ffn);
      for (let d = 0; d < h; d++) out[d] += routing.weights[i] * y[d];
    });
    return out;
  };
}

/** Logits at every position of `tokens` (reference-forward.ts with the MoE blocks). */
export function referenceMoeForward(config: ModelArchConfig, weights: ModelWeights, tokens: readonly number[], seen?: Routing[][]): Float32Array[] {
  return referenceForward(config, weights, tokens, referenceMoe(config, weights, seen));
}
