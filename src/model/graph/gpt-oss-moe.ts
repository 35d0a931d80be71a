// gpt-oss's MoE block as one onnxruntime com.microsoft MoE node: the router (linear with bias)
// picks each row's top-k experts by logit and weighs them by a softmax over those k (the MoE op's
// softmax over all experts renormalised over the top k is the same numbers), and each expert is
// down(swiglu(gate_up(x))) with biases, where swiglu clamps gate to (-inf, limit] and up to
// [-limit, limit] and gives gate * sigmoid(alpha * gate) * (up + 1). The op runs only the
// experts a row picked; its fused FC1 wants gate and up rows interleaved, as HF stores them.
import { attrFloat, attrInt, type GraphBuilder } from './graph-builder';
import { emitLinear, type LinearOptions } from './linear';
import { OnnxDataType } from './onnx-proto';
import { checkLinear, requireWeight, toF32 } from './weights';
import type { GptOssArchConfig } from '../gpt-oss/gpt-oss-config';
import type { DecoderArchConfig, ModelWeights } from '../types';

/** The block's output [rows, hidden] for the post-attention-normed rows `x` of layer `layer` (a decoder-segments FeedForward). */
export function gptOssMoe(g: GraphBuilder, x: string, config: DecoderArchConfig, weights: ModelWeights, layer: number, opts: LinearOptions): string {
  const c = config as GptOssArchConfig;
  const { numExperts: e, expertIntermediateSize: ffn, hiddenSize: h } = c;
  const p = `model.layers.${layer}.mlp.`;
  const routerName = `${p}gate.weight`;
  const router = requireWeight(weights, routerName);
  checkLinear(routerName, router, h, e);
  const logits = emitLinear(g, x, routerName, [router], toF32(requireWeight(weights, `${p}gate.bias`)), h, opts);
  const expert = (name: string, shape: number[]) => {
    const t = requireWeight(weights, `${p}experts.${name}`);
    if (t.shape.join(',') !== shape.join(',')) throw new Error(`weight '${p}experts.${name}' has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`);
    return toF32(t);
  };
  const fc1 = interleaveRows(expert('gate_proj.weight', [e, ffn, h]), expert('up_proj.weight', [e, ffn, h]), e * ffn, h);
  const fc1Bias = interleaveRows(expert('gate_proj.bias', [e, ffn]), expert('up_proj.bias', [e, ffn]), e * ffn, 1);
  // The block computes in float32: the architecture builds no other type (graphDtypes).
  const f32 = OnnxDataType.FLOAT;
  const inputs = [
    x,
    logits,
    g.initializer(`${p}experts.fc1`, f32, [e, 2 * ffn, h], fc1),
    g.initializer(`${p}experts.fc1_bias`, f32, [e, 2 * ffn], fc1Bias),
    g.initializer(`${p}experts.fc2`, f32, [e, h, ffn], expert('down_proj.weight', [e, h, ffn])),
    g.initializer(`${p}experts.fc2_bias`, f32, [e, h], expert('down_proj.bias', [e, h])),
  ];
  return g.op(
    'MoE',
    inputs,
    {
      k: attrInt(c.numExpertsPerToken),
      normalize_routing_weights: attrInt(1),
      activation_type: { s: 'swiglu' },
      swiglu_fusion: attrInt(1),
      swiglu_limit: attrFloat(c.swigluLimit),
      activation_alpha: attrFloat(c.swigluAlpha),
      activation_beta: attrFloat(1),
    },
    'com.microsoft',
  );
}

/** Rows a[0], b[0], a[1], b[1], … of two [rows, width] tensors. */
function interleaveRows(a: Float32Array, b: Float32Array, rows: number, width: number): Float32Array {
  const out = new Float32Array(2 * rows * width);
  for (let r = 0; r < rows; r++) {
    out.set(a.subarray(r * width, (r + 1) * width), 2 * r * width);
    out.set(b.subarray(r * width, (r + 1) * width), (2 * r + 1) * width);
  }
  return out;
}
