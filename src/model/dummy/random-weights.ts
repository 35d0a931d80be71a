// Seeded random weights of any architecture (from its weight specs). Each tensor's values depend only on (seed, name), so tensors can be
// generated lazily, in any order, one at a time (the GGUF writer streams them to disk).
import type { WeightSpec } from '../architectures/architecture';
import { decoderWeightSpecs } from '../architectures/decoder-family';
import type { DecoderArchConfig } from '../types';

/** Uniform(-a, a) with a = 0.02·√3 (std 0.02, as HF initialises linear layers); norm gains are 1, norm biases 0. */
export function randomWeight(spec: WeightSpec, seed: number): Float32Array {
  const count = spec.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(count);
  if (spec.isNorm) return out.fill(1);
  if (spec.isNormBias) return out;
  fillUniform(out, hashName(spec.name) ^ seed, 0.02 * Math.sqrt(3));
  return out;
}

export interface RandomTensor {
  name: string;
  shape: number[];
  values: () => Float32Array;
}

/** Every weight of `specs`, each generated on demand. */
export function randomWeights(specs: readonly WeightSpec[], seed: number): RandomTensor[] {
  return specs.map((spec) => ({ name: spec.name, shape: spec.shape, values: () => randomWeight(spec, seed) }));
}

/** Every weight of a decoder that generates (HF names and shapes). */
export function randomDecoderWeights(config: DecoderArchConfig, seed: number): RandomTensor[] {
  return randomWeights(decoderWeightSpecs(config), seed);
}

/** FNV-1a of the name: gives each tensor its own stream (the prime multiply written as shifts). */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = (h + (h << 1) + (h << 4) + (h << 7) + (h << 8) + (h << 24)) >>> 0;
  }
  return h;
}

/**
 * xorshift32 mapped to uniform(-a, a). Shifts and xors only: Math.imul-based generators run
 * ~40x slower under jest's VM, and these weights only need to be spread, not cryptographic.
 */
function fillUniform(out: Float32Array, seed: number, a: number): void {
  let s = seed >>> 0 || 0x9e3779b9;
  const scale = (2 * a) / 4294967296;
  for (let i = 0; i < out.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = (s >>> 0) * scale - a;
  }
}
