// Whisper's audio encoder as an ONNX graph, ending in the decoder's cross-attention keys and
// values, so they are computed once per request (here) and never again per decoding step.
//
// input_features [B, mels, 2P] -> conv1 (k3, pad 1) + GELU -> conv2 (k3, stride 2, pad 1) + GELU
// -> [B, P, d] + positions (embed_positions, sinusoidal in the checkpoint) -> pre-LN transformer
// layers (self-attention, GELU MLP) -> layer_norm.
// Outputs: cross_kv [2·L, B, heads, P', head_dim] — for each decoder layer l, rows 2l
// (K = encoder_attn.k_proj) and 2l+1 (V = encoder_attn.v_proj + bias), head-major and zero-padded
// to P' = P rounded up to whole KV blocks: per sequence exactly its cross blocks' contents, which
// the decoder gathers and reshapes to [B, heads, P', head_dim] without a copy or a transpose per
// step — and encoder_hidden [B, P, d].

import { BuiltModel, GraphBuilder } from './graph-builder';
import { LinearOptions } from './linear';
import { paddedCrossPositions } from './whisper-parts';
import { OnnxDataType } from './onnx-proto';
import { requireWeight, toF32 } from './weights';
import { WhisperGraphParts } from './whisper-parts';
import { encoderOf } from '../whisper/whisper-config';
import type { ModelWeights, WhisperArchConfig } from '../types';

export const WhisperEncoderIO = {
  features: 'input_features',
  crossKv: 'cross_kv',
  hidden: 'encoder_hidden',
} as const;

export interface WhisperEncoderGraphOptions extends LinearOptions {
  /** Tokens per KV block: the cross K/V are padded to whole blocks. */
  blockSize: number;
}

export function buildWhisperEncoderGraph(config: WhisperArchConfig, weights: ModelWeights, opts: WhisperEncoderGraphOptions): BuiltModel {
  const enc = encoderOf(config);
  const d = config.hiddenSize;
  const positions = enc.numPositions;
  const g = new GraphBuilder('whisper-encoder');
  const parts = new WhisperGraphParts(g, weights, opts, d, enc.layerNormEps);
  const f32 = OnnxDataType.FLOAT;

  const features = g.input(WhisperEncoderIO.features, f32, ['batch', enc.numMelBins, 2 * positions]);
  const conv = (x: string, name: string, inChannels: number, stride: number) => {
    const weight = requireWeight(weights, `${name}.weight`);
    if (weight.shape.join(',') !== [d, inChannels, 3].join(',')) {
      throw new Error(`weight '${name}.weight' has shape [${weight.shape.join(', ')}], expected [${d}, ${inChannels}, 3]`);
    }
    const w = g.initializer(`${name}.weight`, f32, [d, inChannels, 3], toF32(weight));
    const b = g.initializer(`${name}.bias`, f32, [d], parts.vector(`${name}.bias`, d));
    const y = g.op('Conv', [x, w, b], { kernel_shape: { ints: [3] }, pads: { ints: [1, 1] }, strides: { ints: [stride] } });
    return g.op('Gelu', [y]);
  };
  const conv2 = conv(conv(features, 'model.encoder.conv1', enc.numMelBins, 1), 'model.encoder.conv2', d, 2);

  const positionName = 'model.encoder.embed_positions.weight';
  const positionTensor = requireWeight(weights, positionName);
  if (positionTensor.shape.join(',') !== [positions, d].join(',')) {
    throw new Error(`weight '${positionName}' has shape [${positionTensor.shape.join(', ')}], expected [${positions}, ${d}]`);
  }
  const embedded = g.op('Add', [
    g.op('Transpose', [conv2], { perm: { ints: [0, 2, 1] } }),
    g.initializer(positionName, f32, [positions, d], toF32(positionTensor)),
  ]);

  const rows = g.constInt64([-1, d]);
  const perSequence = g.constInt64([-1, positions, d]);
  let hidden = g.op('Reshape', [embedded, rows]);
  for (let l = 0; l < enc.numLayers; l++) {
    const p = `model.encoder.layers.${l}`;
    const normed = parts.layerNorm(hidden, `${p}.self_attn_layer_norm`);
    const [q, k, v] = parts.fusedProjections(normed, `${p}.self_attn.qkv_proj.weight`, ['q_proj', 'k_proj', 'v_proj'].map((n) => `${p}.self_attn.${n}`));
    const to3d = (x: string) => g.op('Reshape', [x, perSequence]);
    const attn = parts.attention(to3d(q), to3d(k), to3d(v), enc.numHeads);
    hidden = g.op('Add', [hidden, parts.linear(g.op('Reshape', [attn, rows]), `${p}.self_attn.out_proj`, d, d)]);
    hidden = g.op('Add', [hidden, parts.feedForward(parts.layerNorm(hidden, `${p}.final_layer_norm`), p, enc.ffnDim)]);
  }
  const encoded = parts.layerNorm(hidden, 'model.encoder.layer_norm');
  g.node('Reshape', [encoded, perSequence], [WhisperEncoderIO.hidden]);
  g.output(WhisperEncoderIO.hidden, f32, ['batch', positions, d]);

  // Every decoder layer's cross-attention K and V in one GEMM: [B·P, 2·L·d] -> [2·L, B, P, d].
  const crossPrefixes: string[] = [];
  for (let l = 0; l < config.numLayers; l++) {
    crossPrefixes.push(`model.decoder.layers.${l}.encoder_attn.k_proj`, `model.decoder.layers.${l}.encoder_attn.v_proj`);
  }
  const kv = parts.fusedLinear(encoded, 'model.decoder.cross_kv_proj.weight', crossPrefixes);
  const heads = config.numHeads;
  const headDim = d / heads;
  const padded = paddedCrossPositions(positions, opts.blockSize);
  const split = g.op('Reshape', [kv, g.constInt64([-1, positions, crossPrefixes.length, heads, headDim])]);
  const headMajor = g.op('Transpose', [split], { perm: { ints: [2, 0, 3, 1, 4] } });
  const pads = g.constInt64([0, 0, 0, 0, 0, 0, 0, 0, padded - positions, 0]);
  g.node('Pad', [headMajor, pads], [WhisperEncoderIO.crossKv]);
  g.output(WhisperEncoderIO.crossKv, f32, [2 * config.numLayers, 'batch', heads, padded, headDim]);

  return g.build({ '': 23 });
}
