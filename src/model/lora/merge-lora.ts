// A base model's weights with an adapter folded in, W' = W + b·a (b holds the scaling), summed in
// float64: what a served adapter must compute, as one plain model (bench/lora-parity.ts writes it
// as a GGUF for llama.cpp; tests run it through the reference forward).
import { dequantize } from '../gguf/dequant';
import type { ModelWeights, WeightTensor } from '../types';
import type { LoraModule, LoraPair, LoraWeights } from './lora-weights';

/** The canonical (Hugging Face) name of the weight `module` of layer `layer` adapts. */
export function loraWeightName(layer: number, module: LoraModule): string {
  const group = /^(q|k|v|o)_proj$/.test(module) ? 'self_attn' : 'mlp';
  return `model.layers.${layer}.${group}.${module}.weight`;
}

/** `weights` with every adapted linear replaced by W + b·a (float32, dequantized); other tensors are shared. */
export function mergeLora(weights: ModelWeights, lora: LoraWeights): ModelWeights {
  const merged = new Map<string, WeightTensor>();
  lora.layers.forEach((modules, layer) => {
    for (const [module, pair] of modules) {
      const name = loraWeightName(layer, module);
      merged.set(name, { kind: 'f32', shape: [pair.outFeatures, pair.inFeatures], data: mergedMatrix(weightAsF32(weights.get(name)), pair) });
    }
  });
  return {
    names: () => weights.names(),
    has: (name) => weights.has(name),
    get: (name) => merged.get(name) ?? weights.get(name),
  };
}

/** A weight's values as float32 (quantized ones dequantized). */
export function weightAsF32(tensor: WeightTensor): Float32Array {
  return tensor.kind === 'f32' ? tensor.data : dequantize(tensor.format, tensor.data, tensor.shape.reduce((a, b) => a * b, 1));
}

function mergedMatrix(w: Float32Array, { a, b, rank, inFeatures, outFeatures }: LoraPair): Float32Array {
  const out = new Float32Array(outFeatures * inFeatures);
  const row = new Float64Array(inFeatures);
  for (let o = 0; o < outFeatures; o++) {
    for (let i = 0; i < inFeatures; i++) row[i] = w[o * inFeatures + i];
    for (let r = 0; r < rank; r++) {
      const coef = b[o * rank + r];
      for (let i = 0; i < inFeatures; i++) row[i] += coef * a[r * inFeatures + i];
    }
    out.set(row, o * inFeatures);
  }
  return out;
}
