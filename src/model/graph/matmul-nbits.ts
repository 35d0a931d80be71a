// GGML blocks -> com.microsoft MatMulNBits (filled in with the quantized path).
import { GraphBuilder } from './graph-builder';
import { WeightTensor } from '../types';

/** Emits MatMulNBits for the weights, or returns null when their format cannot be represented exactly. */
export function quantizedLinear(
  _g: GraphBuilder,
  _x: string,
  _name: string,
  _parts: readonly WeightTensor[],
  _bias: Float32Array | null,
  _inFeatures: number,
  _outFeatures: number,
): string | null {
  return null;
}
