// Llama 3.1+ GGUF files carry no rope_scaling keys: llama.cpp's converter bakes HF's "llama3"
// scaling into a rope_freqs tensor of per-frequency divisors. This recovers the HF rope_scaling
// dict (the form the contract and graph use) from those divisors.
//
// HF llama3 scaling, per inverse frequency f with wavelength w = 2π/f:
//   w < O/H      -> divisor 1
//   w > O/L      -> divisor F
//   otherwise    -> 1/divisor = (1 - s)/F + s,  s = (O/w - L)/(H - L)
// s is linear in 1/w: s = a/w + b with a = O/(H-L), b = -L/(H-L). Only O/L and O/H matter, so O is
// fixed at Llama 3's 8192 and L, H follow from a and b, fitted on two smooth-region frequencies.

import { llama3Scaling } from '../graph/rope';

const ORIGINAL_CONTEXT = 8192;

export function ropeScalingFromFreqFactors(
  factors: Float32Array,
  ropeTheta: number,
  headDim: number,
): Record<string, unknown> {
  const inv = Array.from(factors, (_, i) => 1 / ropeTheta ** ((2 * i) / headDim));
  const factor = Math.max(...factors);
  const fallback = { rope_type: 'freq_factors', freq_factors: Array.from(factors) };
  if (factor <= 1) return factors.every((d) => d === 1) ? { rope_type: 'default' } : fallback;
  // Points strictly inside the smooth region, as (1/wavelength, s).
  const smooth = Array.from(factors)
    .map((d, i) => ({ x: inv[i] / (2 * Math.PI), s: (1 / d - 1 / factor) / (1 - 1 / factor) }))
    .filter(({ s }) => s > 1e-4 && s < 1 - 1e-4);
  if (smooth.length < 2) return fallback;
  const [p, q] = [smooth[0], smooth[smooth.length - 1]];
  const a = (q.s - p.s) / (q.x - p.x);
  const b = p.s - a * p.x;
  const low = (-b * ORIGINAL_CONTEXT) / a;
  const high = low + ORIGINAL_CONTEXT / a;
  const scaling = {
    rope_type: 'llama3',
    factor,
    low_freq_factor: round(low),
    high_freq_factor: round(high),
    original_max_position_embeddings: ORIGINAL_CONTEXT,
  };
  // Only claim llama3 scaling when it reproduces every divisor.
  const reproduced = llama3Divisors(inv, scaling);
  return reproduced.every((d, i) => Math.abs(d - factors[i]) <= 1e-3 * factors[i]) ? scaling : fallback;
}

/** HF's llama3 formula (the graph's) as divisors of each inverse frequency (also used to check the fit). */
export function llama3Divisors(
  inv: number[],
  s: { factor: number; low_freq_factor: number; high_freq_factor: number; original_max_position_embeddings: number },
): number[] {
  const scaled = llama3Scaling(Float64Array.from(inv), s, s.factor);
  return inv.map((f, i) => f / scaled[i]);
}

/** Fitted values come out as e.g. 3.9999998; configs say 4. */
function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
