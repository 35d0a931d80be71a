// Float64 references for LoRA checks: the delta a stored pair makes (scaling · B · A), computed
// from the file's own numbers, independently of the loader.
import type { StoredLoraPair } from '../../src/model/lora/assemble-lora';

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
