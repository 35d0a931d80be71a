// Weight access for the graph builder: f32 views of any tensor, and row-wise concatenation
// (fused QKV and gate/up projections), keeping the canonical [out, in] layout.
import { dequantize } from '../gguf/dequant';
import { ModelWeights, WeightTensor } from '../types';

export function requireWeight(weights: ModelWeights, name: string): WeightTensor {
  if (!weights.has(name)) throw new Error(`model weights lack tensor '${name}'`);
  return weights.get(name);
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** The tensor as f32 (dequantized when stored as GGML blocks). */
export function toF32(tensor: WeightTensor): Float32Array {
  if (tensor.kind === 'f32') return tensor.data;
  return dequantize(tensor.format, tensor.data, elementCount(tensor.shape));
}

/** Checks a linear weight is [out, in] with the expected input size. */
export function checkLinear(name: string, tensor: WeightTensor, inFeatures: number, outFeatures?: number): void {
  const [out, inp] = tensor.shape;
  if (tensor.shape.length !== 2 || inp !== inFeatures || (outFeatures !== undefined && out !== outFeatures)) {
    const want = `[${outFeatures ?? 'out'}, ${inFeatures}]`;
    throw new Error(`weight '${name}' has shape [${tensor.shape.join(', ')}], expected ${want}`);
  }
}

/** Concatenates typed arrays (rows of [out, in] tensors stacked along out, biases, …). */
export function concatArrays<T extends Uint8Array | Float32Array>(parts: readonly T[], make: (length: number) => T): T {
  if (parts.length === 1) return parts[0];
  const out = make(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const concatF32 = (parts: readonly Float32Array[]): Float32Array => concatArrays(parts, (n) => new Float32Array(n));
