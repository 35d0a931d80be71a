// The per-head RMSNorm some decoders (qwen3) apply to q and k before RoPE, as ONNX nodes shared by
// the segment graphs and the one-graph decoders.
import { attrFloat, attrInt, type GraphBuilder } from './graph-builder';
import { requireWeight, toF32 } from './weights';
import type { DecoderArchConfig, ModelWeights } from '../types';

/**
 * x [rows, heads * headDim] with each head RMS-normed by layer l's self_attn.{which}.weight
 * ([headDim], eps rmsNormEps); x itself when the config has no q/k norms. `initializer` adds a
 * weight in the graph's compute type.
 */
export function emitQkNorm(
  g: GraphBuilder,
  c: DecoderArchConfig,
  weights: ModelWeights,
  initializer: (name: string, dims: number[], values: Float32Array) => string,
  l: number,
  x: string,
  which: 'q_norm' | 'k_norm',
): string {
  if (!c.qkNorm) return x;
  const name = `model.layers.${l}.self_attn.${which}.weight`;
  const w = initializer(name, [c.headDim], toF32(requireWeight(weights, name)));
  const perHead = g.op('Reshape', [x, g.constInt64([-1, c.headDim])]);
  const normed = g.op('SimplifiedLayerNormalization', [perHead, w], { axis: attrInt(-1), epsilon: attrFloat(c.rmsNormEps) });
  // Back to x's own shape (2-D rows or [B, S, width]).
  return g.op('Reshape', [normed, g.op('Shape', [x])]);
}
