// The llama/qwen2 segments (decoder-segments.ts) when the addon's Q8_0 GEMM (native/src/q8-gemm.cc,
// AVX512-VNNI) runs o_proj, the MLP's gate_up and down, and the head: every one of those weights
// is Q8_0, the graphs are float32, and the CPU has the instructions. The GEMM runs between the
// segments, so each layer's stretch between two attentions is cut twice more:
//
// Segment 0:          as decoder-segments.ts (input_layernorm(0) → QKV → RoPE → packed q, k, v)
// Segment 1 + 2l:     attn = o_proj(layer l's attention), hidden (residual) → post_attention_layernorm
//                     → packed (normed [N, hidden], residual [N, hidden])
// (the runner: gate_up, SiLU(gate) * up, down, in the addon)
// Segment 2 + 2l:     attn = down output, hidden = that residual → input_layernorm(l + 1) → QKV → RoPE
//                     → packed (q, k, v, residual); for the last layer, the final norm → the rows
//                     picked by logits_rows → picked_hidden [picked, hidden] (the runner: the head)
//
// QKV and RoPE stay in onnxruntime (RoPE between the QKV GEMM and the cache would be one more
// cut). Why: MatMulNBits (accuracy level 4, int8 activations) measured 2.3-3.5x slower than
// the addon's kernel at 8-512 rows on the 100M and 1.1B shapes, 1.1-2.4x at one row (the table
// is in q8-gemm.cc's header); both quantize activations the same way (their outputs differ by
// ~1e-6 relative), so greedy tokens stay the same.
import { GraphBuilder, BuiltModel, attrFloat, attrInt } from './graph-builder';
import { OnnxDataType } from './onnx-proto';
import { unpackGgml } from './ggml-unpack';
import { buildDecoderSegment, finishWithAttentionInputs, SegmentInputs, SegmentOutputs, type SegmentedDecoder, type SegmentedDecoderOptions } from './decoder-segments';
import { ropeTables } from './rope';
import { checkLinear, concatArrays, elementCount, requireWeight, toF32 } from './weights';
import type { DecoderArchConfig, ModelWeights } from '../types';

/** A Q8_0 weight [n, k] as q8Pack takes it: codes q + 128 row-major, one scale per 32 codes. */
export interface Q8Weight {
  codes: Uint8Array;
  scales: Float32Array;
  n: number;
  k: number;
}

/** The linears the runner runs in the addon (read from the weights when asked, to be packed and released). */
export interface Q8Linears {
  /** Layer l's o_proj, gate_up (gate rows, then up rows) and down_proj. */
  layer(l: number): { o: Q8Weight; gateUp: Q8Weight; down: Q8Weight };
  head(): Q8Weight;
}

const prefix = (l: number) => `model.layers.${l}.`;

function headName(c: DecoderArchConfig, weights: ModelWeights): string {
  return !c.tieWordEmbeddings && weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
}

function nativeLinearNames(c: DecoderArchConfig, weights: ModelWeights): string[] {
  const names = [headName(c, weights)];
  for (let l = 0; l < c.numLayers; l++) names.push(...['self_attn.o_proj', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'].map((n) => `${prefix(l)}${n}.weight`));
  return names;
}

/** True when every linear the addon would take is Q8_0 and the graphs are float32. */
export function q8LinearsApply(c: DecoderArchConfig, weights: ModelWeights, opts: SegmentedDecoderOptions): boolean {
  if ((opts.dtype ?? 'float32') !== 'float32' || !opts.keepQuantized || c.hiddenSize % 32 || c.intermediateSize % 32 || (c.numHeads * c.headDim) % 32) return false;
  return nativeLinearNames(c, weights).every((name) => {
    if (!weights.has(name)) return false;
    const t = weights.get(name);
    return t.kind === 'quantized' && t.format === 'q8_0';
  });
}

function q8Weight(weights: ModelWeights, names: string[], k: number, outs: number[]): Q8Weight {
  const parts = names.map((name, i) => {
    const t = requireWeight(weights, name);
    checkLinear(name, t, k, outs[i]);
    if (t.kind !== 'quantized' || t.format !== 'q8_0') throw new Error(`weight '${name}' is not Q8_0`);
    return unpackGgml('q8_0', t.data, elementCount(t.shape))!;
  });
  const n = outs.reduce((a, b) => a + b, 0);
  return {
    codes: concatArrays(parts.map((p) => p.codes), (len) => new Uint8Array(len)),
    scales: concatArrays(parts.map((p) => p.scales), (len) => new Float32Array(len)),
    n,
    k,
  };
}

/** The segments above (count 1 + 2 * numLayers) and the linears between them. */
export function q8LinearSegments(c: DecoderArchConfig, weights: ModelWeights, opts: SegmentedDecoderOptions): SegmentedDecoder & { q8Linears: Q8Linears } {
  const { cos, sin } = ropeTables(c, opts.maxPositions);
  const qDim = c.numHeads * c.headDim;
  const h = c.hiddenSize;
  const inter = c.intermediateSize;
  return {
    count: 1 + 2 * c.numLayers,
    build: (index) => (index === 0 ? buildDecoderSegment(c, weights, 0, opts) : buildQ8Segment(c, weights, index, opts)),
    embeddingName: 'model.embed_tokens.weight',
    rope: { cos, sin, half: c.headDim / 2 },
    q8Linears: {
      layer: (l) => ({
        o: q8Weight(weights, [`${prefix(l)}self_attn.o_proj.weight`], qDim, [h]),
        gateUp: q8Weight(weights, [`${prefix(l)}mlp.gate_proj.weight`, `${prefix(l)}mlp.up_proj.weight`], h, [inter, inter]),
        down: q8Weight(weights, [`${prefix(l)}mlp.down_proj.weight`], inter, [h]),
      }),
      head: () => q8Weight(weights, [headName(c, weights)], h, [c.vocabSize]),
    },
  };
}

function buildQ8Segment(c: DecoderArchConfig, weights: ModelWeights, index: number, opts: SegmentedDecoderOptions): BuiltModel {
  if (!Number.isInteger(index) || index < 1 || index > 2 * c.numLayers) throw new Error(`segment ${index} does not exist (0..${2 * c.numLayers})`);
  const g = new GraphBuilder(`${c.architecture}-q8-segment-${index}`);
  const f32 = OnnxDataType.FLOAT;
  const x = g.input(SegmentInputs.attn, f32, ['rows', c.hiddenSize]);
  const residualIn = g.input(SegmentInputs.hidden, f32, ['rows', c.hiddenSize]);
  const skipNorm = (normName: string) => {
    const weight = g.initializer(normName, f32, [c.hiddenSize], toF32(requireWeight(weights, normName)));
    const outs = g.node('SkipSimplifiedLayerNormalization', [x, residualIn, weight], [0, 1, 2, 3].map(() => g.fresh('skipnorm')), { epsilon: attrFloat(c.rmsNormEps) }, 'com.microsoft');
    return { normed: outs[0], residual: outs[3] };
  };
  const l = Math.floor((index - 1) / 2);
  if (index % 2 === 1) {
    const { normed, residual } = skipNorm(`${prefix(l)}post_attention_layernorm.weight`);
    const flat = g.constInt64([-1]);
    g.node('Concat', [g.op('Reshape', [normed, flat]), g.op('Reshape', [residual, flat])], [SegmentOutputs.packed], { axis: attrInt(0) });
    g.output(SegmentOutputs.packed, f32, ['packed']);
    return g.build({ '': 23, 'com.microsoft': 1 });
  }
  if (l < c.numLayers - 1) {
    const { normed, residual } = skipNorm(`${prefix(l + 1)}input_layernorm.weight`);
    return finishWithAttentionInputs(g, c, weights, l + 1, normed, residual, opts);
  }
  const { normed } = skipNorm('model.norm.weight');
  const rows = g.input(SegmentInputs.logitsRows, OnnxDataType.INT64, ['picked']);
  g.node('Gather', [normed, rows], [SegmentOutputs.pickedHidden], { axis: attrInt(0) });
  g.output(SegmentOutputs.pickedHidden, f32, ['picked', c.hiddenSize]);
  return g.build({ '': 23, 'com.microsoft': 1 });
}
