// Whisper's text decoder as an ONNX graph over the runner's paged KV cache: the same inputs and
// outputs as the decoder-only graph (decoder-graph.ts) plus `cross_blocks`, each sequence's
// cross-attention blocks. Those blocks sit in the same per-layer cache arrays as the
// self-attention ones and hold the encoder's K/V, head-major ([heads, P', head_dim], written once
// per request by the encoder run): every step gathers them straight into the attention's
// [B, heads, P', head_dim] layout and masks the padding rows past the P encoder positions.
// (Gathering position-major rows instead, then slicing and letting Attention transpose them,
// measured ~20 ms per sequence per step on whisper-tiny: the copies of the 1500-row K/V dominate.)
//
// Per layer (pre-LN): x += self_attn(LN(x)) (causal, paged), x += encoder_attn(LN(x)) over the
// cross blocks, x += fc2(gelu(fc1(LN(x)))); then layer_norm and the tied (or proj_out) head.
// Embeddings: embed_tokens(ids) · (sqrt(d) when scale_embedding) + embed_positions(position_ids).

import { attrInt, BuiltModel, GraphBuilder } from './graph-builder';
import { DecoderInputs, DecoderOutputs } from './decoder-graph';
import { emitLinear, LinearOptions } from './linear';
import { OnnxDataType } from './onnx-proto';
import { declareLayerCache, pagedSelfAttention } from './paged-attention';
import { checkLinear, requireWeight, toF32 } from './weights';
import { paddedCrossPositions, WhisperGraphParts } from './whisper-parts';
import { encoderOf } from '../whisper/whisper-config';
import type { ModelWeights, WhisperArchConfig } from '../types';

export const WhisperDecoderInputs = { ...DecoderInputs, crossBlocks: 'cross_blocks' } as const;
export const WhisperDecoderOutputs = DecoderOutputs;

export interface WhisperDecoderGraphOptions extends LinearOptions {
  blockSize: number;
}

export function buildWhisperDecoderGraph(config: WhisperArchConfig, weights: ModelWeights, opts: WhisperDecoderGraphOptions): BuiltModel {
  const enc = encoderOf(config);
  const d = config.hiddenSize;
  const g = new GraphBuilder('whisper-decoder');
  const parts = new WhisperGraphParts(g, weights, opts, d, enc.layerNormEps);
  const f32 = OnnxDataType.FLOAT;
  const i64 = OnnxDataType.INT64;

  const inputIds = g.input(WhisperDecoderInputs.inputIds, i64, ['batch', 'seq']);
  const positionIds = g.input(WhisperDecoderInputs.positionIds, i64, ['batch', 'seq']);
  const pastBlocks = g.input(WhisperDecoderInputs.pastBlocks, i64, ['batch', 'past_blocks']);
  const attnMask = g.input(WhisperDecoderInputs.attnMask, OnnxDataType.BOOL, ['batch', 1, 'seq', 'total']);
  const logitsRows = g.input(WhisperDecoderInputs.logitsRows, i64, ['rows']);
  const crossBlocks = g.input(WhisperDecoderInputs.crossBlocks, i64, ['batch', 'cross_blocks']);

  const flat = g.constInt64([-1]);
  const rows = g.constInt64([-1, d]);
  const batchSeqAny = g.op('Concat', [g.op('Shape', [inputIds]), g.constInt64([-1])], { axis: attrInt(0) });
  const to3d = (x: string) => g.op('Reshape', [x, batchSeqAny]);

  const embedName = 'model.decoder.embed_tokens.weight';
  const embedTensor = requireWeight(weights, embedName);
  checkLinear(embedName, embedTensor, d, config.vocabSize);
  const embed = g.initializer(embedName, f32, [config.vocabSize, d], toF32(embedTensor));
  const positionName = 'model.decoder.embed_positions.weight';
  const positionTensor = requireWeight(weights, positionName);
  checkLinear(positionName, positionTensor, d, config.maxPositionEmbeddings);
  const positionTable = g.initializer(positionName, f32, [config.maxPositionEmbeddings, d], toF32(positionTensor));
  let tokens = g.op('Gather', [embed, g.op('Reshape', [inputIds, flat])], { axis: attrInt(0) });
  if (enc.scaleEmbedding) tokens = g.op('Mul', [tokens, g.constFloat([Math.sqrt(d)], [])]);
  let hidden = g.op('Add', [tokens, g.op('Gather', [positionTable, g.op('Reshape', [positionIds, flat])], { axis: attrInt(0) })]);

  const heads = config.numHeads;
  const headDim = d / heads;
  const padded = paddedCrossPositions(enc.numPositions, opts.blockSize);
  const crossShape = g.constInt64([0, heads, padded, headDim]);
  // ORT's Attention wants the mask's query dimension spelled out: [1, 1, seq, P'].
  const crossMask =
    padded === enc.numPositions
      ? null
      : g.op('Expand', [
          g.initializer('cross_attn_mask', OnnxDataType.BOOL, [1, 1, 1, padded], Uint8Array.from({ length: padded }, (_, t) => (t < enc.numPositions ? 1 : 0))),
          g.op('Concat', [g.constInt64([1, 1]), g.op('Slice', [g.op('Shape', [inputIds]), g.constInt64([1]), g.constInt64([2])]), g.constInt64([padded])], { axis: attrInt(0) }),
        ]);
  /** [B, S, d] -> [B, heads, S, head_dim]. */
  const headsFirst = (x: string) => g.op('Transpose', [g.op('Reshape', [x, g.constInt64([0, 0, heads, headDim])])], { perm: { ints: [0, 2, 1, 3] } });
  const newKv: string[] = [];
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.decoder.layers.${l}`;
    const cache = declareLayerCache(g, l, opts.blockSize, d);

    const normed = parts.layerNorm(hidden, `${p}.self_attn_layer_norm`);
    const [q, k, v] = parts.fusedProjections(normed, `${p}.self_attn.qkv_proj.weight`, ['q_proj', 'k_proj', 'v_proj'].map((n) => `${p}.self_attn.${n}`));
    const [k3, v3] = [to3d(k), to3d(v)];
    newKv.push(k3, v3);
    const selfAttn = pagedSelfAttention(g, {
      q: to3d(q),
      k: k3,
      v: v3,
      cache,
      pastBlocks,
      mask: attnMask,
      numHeads: config.numHeads,
      numKvHeads: config.numKvHeads,
      kvDim: d,
    });
    hidden = g.op('Add', [hidden, parts.linear(g.op('Reshape', [selfAttn, rows]), `${p}.self_attn.out_proj`, d, d)]);

    const crossQ = parts.linear(parts.layerNorm(hidden, `${p}.encoder_attn_layer_norm`), `${p}.encoder_attn.q_proj`, d, d);
    const encoderKv = (cacheInput: string) => g.op('Reshape', [g.op('Gather', [cacheInput, crossBlocks], { axis: attrInt(0) }), crossShape]);
    const crossInputs = [headsFirst(to3d(crossQ)), encoderKv(cache.k), encoderKv(cache.v), ...(crossMask ? [crossMask] : [])];
    const crossAttn = g.op('Transpose', [g.op('Attention', crossInputs)], { perm: { ints: [0, 2, 1, 3] } });
    hidden = g.op('Add', [hidden, parts.linear(g.op('Reshape', [crossAttn, rows]), `${p}.encoder_attn.out_proj`, d, d)]);

    hidden = g.op('Add', [hidden, parts.feedForward(parts.layerNorm(hidden, `${p}.final_layer_norm`), p, enc.decoderFfnDim)]);
  }

  g.node('Concat', newKv, [WhisperDecoderOutputs.newKv], { axis: attrInt(0) });
  g.output(WhisperDecoderOutputs.newKv, f32, ['kv_rows', 'seq', d]);

  const picked = g.op('Gather', [parts.layerNorm(hidden, 'model.decoder.layer_norm'), logitsRows], { axis: attrInt(0) });
  let logits: string;
  if (config.tieWordEmbeddings) {
    logits = g.op('Gemm', [picked, embed], { transB: attrInt(1) });
  } else {
    const head = requireWeight(weights, 'proj_out.weight');
    checkLinear('proj_out.weight', head, d, config.vocabSize);
    logits = emitLinear(g, picked, 'proj_out.weight', [head], null, d, opts);
  }
  g.node('Identity', [logits], [WhisperDecoderOutputs.logits]);
  g.output(WhisperDecoderOutputs.logits, f32, ['rows', config.vocabSize]);

  return g.build({ '': 23 });
}
