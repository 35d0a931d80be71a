// Seeded random decoder weights. Each tensor's values depend only on (seed, name), so tensors can be
// generated lazily, in any order, one at a time (the GGUF writer streams them to disk).
import { decoderWeightSpecs, type WeightSpec } from '../decoder-weights';
import type { ModelArchConfig } from '../types';

/** Uniform(-a, a) with a = 0.02·√3 (std 0.02, as HF initialises linear layers); norm gains are 1. */
export function randomWeight(spec: WeightSpec, seed: number): Float32Array {
  const count = spec.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(count);
  if (spec.isNorm) return out.fill(1);
  const next = mulberry32(hashName(spec.name) ^ seed);
  const a = 0.02 * Math.sqrt(3);
  for (let i = 0; i < count; i++) out[i] = (next() * 2 - 1) * a;
  return out;
}

/** Every weight of the decoder, each generated on demand (HF names and shapes). */
export function randomDecoderWeights(
  config: ModelArchConfig,
  seed: number,
): Array<{ name: string; shape: number[]; values: () => Float32Array }> {
  return decoderWeightSpecs(config).map((spec) => ({ name: spec.name, shape: spec.shape, values: () => randomWeight(spec, seed) }));
}

/** FNV-1a of the name: gives each tensor its own stream. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** mulberry32: a small, fast, well-distributed 32-bit PRNG returning floats in [0, 1). */
function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
