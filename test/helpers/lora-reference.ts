// Float64 references for LoRA checks: the delta a stored pair makes (scaling · B · A), computed
// from the file's own numbers independently of the loader, and the reference forward of a base
// model with an adapter merged in (what a runner serving the adapter must produce).
import type { StoredLoraPair } from '../../src/model/lora/assemble-lora';
import type { LoraWeights } from '../../src/model/lora/lora-weights';
import { mergeLora } from '../../src/model/lora/merge-lora';
import type { ModelArchConfig, ModelWeights } from '../../src/model/types';
import { referenceForward } from './reference-forward';

/** Logits [tokens.length][vocab] of the llama-family reference forward with `lora` merged into `weights` (null: the base). */
export function referenceLoraForward(config: ModelArchConfig, weights: ModelWeights, lora: LoraWeights | null, tokens: readonly number[]): Float32Array[] {
  return referenceForward(config, lora ? mergeLora(weights, lora) : weights, tokens);
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

/** The delta of one stored (unfused) pair. */
export function storedPairDelta(pair: StoredLoraPair, scaling: number): Float64Array {
  return loraDelta(pair.b, pair.a, pair.bShape[0], pair.aShape[0], pair.aShape[1], scaling);
}
