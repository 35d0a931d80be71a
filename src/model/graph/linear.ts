// y = x W^T (+ b) for one or several row-stacked [out, in] weights.
// f32 weights use Gemm(transB=1): it takes the canonical [out, in] layout directly (no
// transposed copy in JS) and MLAS pre-packs the constant B at session creation.
// Quantized weights go to MatMulNBits when their GGML blocks map onto it exactly (see
// matmul-nbits.ts), else they are dequantized to f32.
import { GraphBuilder, attrInt } from './graph-builder';
import { AccuracyLevel, quantizedLinear } from './matmul-nbits';
import { WeightTensor } from '../types';
import { concatF32, toF32 } from './weights';
import { castTo, ComputeDtype, weightInitializer } from './compute-dtype';

export interface LinearOptions {
  /** Keep GGML-quantized weights quantized (MatMulNBits) where exact; false = dequantize to f32. */
  keepQuantized: boolean;
  /** MatMulNBits accuracy_level; default per format (see matmul-nbits.ts). */
  quantAccuracyLevel?: AccuracyLevel;
  /** Type of x and y, and of f32/f16 weights (default float32). */
  dtype?: ComputeDtype;
}

export function emitLinear(
  g: GraphBuilder,
  x: string,
  name: string,
  parts: readonly WeightTensor[],
  bias: Float32Array | null,
  inFeatures: number,
  opts: LinearOptions,
): string {
  const outFeatures = parts.reduce((n, t) => n + t.shape[0], 0);
  const dtype = opts.dtype ?? 'float32';
  if (opts.keepQuantized && parts.every((t) => t.kind === 'quantized')) {
    // MatMulNBits keeps float32 activations (its scales are f32); a float16 graph casts around it.
    const y = quantizedLinear(g, castTo(g, x, dtype, 'float32'), name, parts, bias, inFeatures, outFeatures, opts.quantAccuracyLevel ?? 'auto');
    if (y) return castTo(g, y, 'float32', dtype);
  }
  const w = weightInitializer(g, dtype, name, [outFeatures, inFeatures], concatF32(parts.map(toF32)));
  const inputs = [x, w];
  if (bias) inputs.push(weightInitializer(g, dtype, `${name}.bias`, [outFeatures], bias));
  return g.op('Gemm', inputs, { transB: attrInt(1) });
}
