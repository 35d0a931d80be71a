// Seeded random LoRA adapters built directly as LoraWeights (every module of every layer), for
// tests and bench/lora-overhead.ts.
import { LORA_MODULES, type LoraModule, type LoraPair, type LoraWeights } from '../src/model/lora/lora-weights';
import { baseLinearShape } from '../src/model/lora/base-linears';
import type { DecoderArchConfig } from '../src/model/types';
import { uniformSource } from './random-llama';

/** An adapter of `rank` over every module of every layer, alpha / rank as its scaling, A ~ U/sqrt(in), B ~ 0.5 U (so its products move the logits clearly). */
export function randomAdapter(c: DecoderArchConfig, rank: number, alpha: number, seed: number): LoraWeights {
  const next = uniformSource(seed);
  const scaling = alpha / rank;
  let bytes = 0;
  const layers = Array.from({ length: c.numLayers }, () => {
    const layer = new Map<LoraModule, LoraPair>();
    for (const module of LORA_MODULES) {
      const { inFeatures, outFeatures } = baseLinearShape(c, module);
      const a = Float32Array.from({ length: rank * inFeatures }, () => next() / Math.sqrt(inFeatures));
      const b = Float32Array.from({ length: outFeatures * rank }, () => Math.fround(0.5 * next()) * scaling);
      layer.set(module, { a, b, rank, inFeatures, outFeatures });
      bytes += 4 * (a.length + b.length);
    }
    return layer;
  });
  return { rank, alpha, scaling, layers, bytes };
}
