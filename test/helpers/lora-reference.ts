// Float64 references for LoRA: a base model's weights with an adapter merged in (W + B·A, the
// scaling already in LoraWeights' b), and the delta a stored pair makes, from the file's numbers.
import type { StoredLoraPair } from '../../src/model/lora/assemble-lora';
import type { LoraModule, LoraWeights } from '../../src/model/lora/lora-weights';
import type { ModelWeights, WeightTensor } from '../../src/model/types';
import { weight } from './reference-forward';

export function loraWeightName(layer: number, module: LoraModule): string {
  const group = /^(q|k|v|o)_proj$/.test(module) ? 'self_attn' : 'mlp';
  return `model.layers.${layer}.${group}.${module}.weight`;
}

/** `weights` with every adapted linear replaced by W + b·a (float64 sums, stored as float32); other tensors shared. */
export function mergeLora(weights: ModelWeights, lora: LoraWeights): ModelWeights {
  const merged = new Map<string, WeightTensor>();
  lora.layers.forEach((modules, layer) => {
    for (const [module, pair] of modules) {
      const name = loraWeightName(layer, module);
      const base = weight(weights, name);
      const delta = loraDelta(pair.b, pair.a, pair.outFeatures, pair.rank, pair.inFeatures, 1);
      const data = new Float32Array(base.length);
      for (let i = 0; i < data.length; i++) data[i] = base[i] + delta[i];
      merged.set(name, { kind: 'f32', shape: [pair.outFeatures, pair.inFeatures], data });
    }
  });
  return {
    names: () => weights.names(),
    has: (name) => weights.has(name),
    get: (name) => merged.get(name) ?? weights.get(name),
  };
}

/** scaling · B · A in float64, [out, in] row-major (B [out, rank], A [rank, in]). */
export function loraDelta(b: Float32Array, a: Float32Array, out: number, rank: number, inFeatures: number, scaling: number): Float64Array {
  const delta = new Float64Array(out * inFeatures);
  for (let o = 0; o < out; o++) {
    for (let r = 0; r < rank; r++) {
      const coef = scaling * b[o * rank + r];
      for (let i = 0; i < inFeatures; i++) delta[o * inFeatures + i] += coef * a[r * inFeatures + i];
    }
  }
  return delta;
}

/** The delta of one stored (unfused) pair: scaling · B · A. */
export function storedPairDelta(pair: StoredLoraPair, scaling: number): Float64Array {
  return loraDelta(pair.b, pair.a, pair.bShape[0], pair.aShape[0], pair.aShape[1], scaling);
}
