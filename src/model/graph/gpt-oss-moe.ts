// gpt-oss's MoE block as one onnxruntime com.microsoft MoE node: the router (linear with bias)
// picks each row's top-k experts by logit and weighs them by a softmax over those k (the MoE op's
// softmax over all experts renormalised over the top k is the same numbers), and each expert is
// down(swiglu(gate_up(x))) with biases, where swiglu clamps gate to (-inf, limit] and up to
// [-limit, limit] and gives gate * sigmoid(alpha * gate) * (up + 1). The op runs only the
// experts a row picked; its fused FC1 wants gate and up rows interleaved, as HF stores them.
import { attrFloat, attrInt, type GraphBuilder } from './graph-builder';
import { emitLinear, type LinearOptions } from './linear';
import { OnnxDataType } from './onnx-proto';
import { q8ToBlockwise } from './q8-blockwise';
import { checkLinear, elementCount, requireWeight, toF32 } from './weights';
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
    return t;
  };
  const [gate, up, down] = [expert('gate_proj.weight', [e, ffn, h]), expert('up_proj.weight', [e, ffn, h]), expert('down_proj.weight', [e, h, ffn])];
  const fc1Bias = interleaveRows(toF32(expert('gate_proj.bias', [e, ffn])), toF32(expert('up_proj.bias', [e, ffn])), e * ffn, 1);
  // The block computes in float32: the architecture builds no other type (graphDtypes).
  const f32 = OnnxDataType.FLOAT;
  const fc2Bias = g.initializer(`${p}experts.fc2_bias`, f32, [e, h], toF32(expert('down_proj.bias', [e, h])));
  const attrs = {
    k: attrInt(c.numExpertsPerToken),
    normalize_routing_weights: attrInt(1),
    activation_type: { s: 'swiglu' },
    swiglu_fusion: attrInt(1),
    swiglu_limit: attrFloat(c.swigluLimit),
    activation_alpha: attrFloat(c.swigluAlpha),
    activation_beta: attrFloat(1),
  };
  if (opts.keepQuantized && [gate, up, down].every((t) => t.kind === 'quantized' && t.format === 'q8_0')) {
    // MXFP4 experts load as Q8_0 (gguf/mxfp4-to-q8.ts): QMoE keeps them 8-bit, activations float.
    const [g8, u8, d8] = [gate, up, down].map((t) => q8ToBlockwise(t.data as Uint8Array, elementCount(t.shape)));
    const u = OnnxDataType.UINT8;
    const inputs = [
      x,
      logits,
      g.initializer(`${p}experts.fc1`, u, [e, 2 * ffn, h], interleaveRows(g8.codes, u8.codes, e * ffn, h)),
      g.initializer(`${p}experts.fc1_scales`, f32, [e, 2 * ffn, h / 32], interleaveRows(g8.scales, u8.scales, e * ffn, h / 32)),
      g.initializer(`${p}experts.fc1_bias`, f32, [e, 2 * ffn], fc1Bias),
      g.initializer(`${p}experts.fc2`, u, [e, h, ffn], d8.codes),
      g.initializer(`${p}experts.fc2_scales`, f32, [e, h, ffn / 32], d8.scales),
      fc2Bias,
    ];
    return g.op('QMoE', inputs, { ...attrs, expert_weight_bits: attrInt(8), block_size: attrInt(32) }, 'com.microsoft');
  }
  const inputs = [
    x,
    logits,
    g.initializer(`${p}experts.fc1`, f32, [e, 2 * ffn, h], interleaveRows(toF32(gate), toF32(up), e * ffn, h)),
    g.initializer(`${p}experts.fc1_bias`, f32, [e, 2 * ffn], fc1Bias),
    g.initializer(`${p}experts.fc2`, f32, [e, h, ffn], toF32(down)),
    fc2Bias,
  ];
  return g.op('MoE', inputs, attrs, 'com.microsoft');
}

/** Rows a[0], b[0], a[1], b[1], … of two [rows, width] tensors. */
function interleaveRows<T extends Float32Array | Uint8Array>(a: T, b: T, rows: number, width: number): T {
  const out = new (a.constructor as new (n: number) => T)(2 * rows * width);
  for (let r = 0; r < rows; r++) {
    out.set(a.subarray(r * width, (r + 1) * width), 2 * r * width);
    out.set(b.subarray(r * width, (r + 1) * width), (2 * r + 1) * width);
  }
  return out;
}
