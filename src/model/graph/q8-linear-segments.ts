// The llama/qwen2 decoder (decoder-segments.ts) when the addon's Q8_0 GEMM (native/src/q8-gemm.cc,
// AVX512-VNNI) runs every linear (QKV, o_proj, the MLP's gate_up and down, the head): every such
// weight is Q8_0, no QKV bias, the graphs are float32, and the CPU has the instructions. The
// addon also applies RoPE and SiLU(gate) * up; onnxruntime keeps the norms, in graphs of one
// (skip-)RMSNorm each:
//
// Segment 0:          hidden (embedded rows) → input_layernorm(0) → packed = normed [N, hidden]
// Segment 1 + 2l:     attn = o_proj(layer l's attention), hidden (residual) → post_attention_layernorm
//                     → packed (normed [N, hidden], residual [N, hidden])
// Segment 2 + 2l:     attn = down_proj output, hidden = that residual → input_layernorm(l + 1) → packed
//                     (normed, residual); for the last layer, the final norm → the rows picked by
//                     logits_rows → picked_hidden [picked, hidden]
//
// Why (issue 16): MatMulNBits (accuracy level 4, int8 activations) measured 2.3-3.5x slower than
// the addon's kernel at 8-512 rows on the 100M and 1.1B shapes and 1.2-2.6x at one row, one thread (the table
// is in q8-gemm.cc's header); both quantize activations the same way (outputs within ~1e-6
// relative), so greedy tokens stay the same. Whole-runner figures: segmented-runner.ts.
import { GraphBuilder, BuiltModel, attrFloat, attrInt } from './graph-builder';
import { OnnxDataType } from './onnx-proto';
import { unpackGgml } from './ggml-unpack';
import { SegmentInputs, SegmentOutputs, type SegmentedDecoder, type SegmentedDecoderOptions } from './decoder-segments';
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

/** Layer l's linears: q, k, v, o_proj, gate_up (gate rows, then up rows) and down_proj. */
export interface Q8Layer<W = Q8Weight> {
  q: W;
  k: W;
  v: W;
  o: W;
  gateUp: W;
  down: W;
}

/** The linears the runner runs in the addon (read from the weights when asked, to be packed and released). */
export interface Q8Linears {
  layer(l: number): Q8Layer;
  head(): Q8Weight;
}

const prefix = (l: number) => `model.layers.${l}.`;

function headName(c: DecoderArchConfig, weights: ModelWeights): string {
  return !c.tieWordEmbeddings && weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
}

function nativeLinearNames(c: DecoderArchConfig, weights: ModelWeights): string[] {
  const names = [headName(c, weights)];
  const linears = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'];
  for (let l = 0; l < c.numLayers; l++) names.push(...linears.map((n) => `${prefix(l)}${n}.weight`));
  return names;
}

/** True when every linear the addon would take is Q8_0 and the graphs are float32. */
export function q8LinearsApply(c: DecoderArchConfig, weights: ModelWeights, opts: SegmentedDecoderOptions): boolean {
  if ((opts.dtype ?? 'float32') !== 'float32' || !opts.keepQuantized || c.attentionBias || c.hiddenSize % 32 || c.intermediateSize % 32 || (c.numHeads * c.headDim) % 32) return false;
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
  const kvDim = c.numKvHeads * c.headDim;
  const h = c.hiddenSize;
  const inter = c.intermediateSize;
  return {
    count: 1 + 2 * c.numLayers,
    build: (index) => buildQ8Segment(c, weights, index),
    embeddingName: 'model.embed_tokens.weight',
    rope: { cos, sin, half: c.headDim / 2 },
    q8Linears: {
      layer: (l) => ({
        q: q8Weight(weights, [`${prefix(l)}self_attn.q_proj.weight`], h, [qDim]),
        k: q8Weight(weights, [`${prefix(l)}self_attn.k_proj.weight`], h, [kvDim]),
        v: q8Weight(weights, [`${prefix(l)}self_attn.v_proj.weight`], h, [kvDim]),
        o: q8Weight(weights, [`${prefix(l)}self_attn.o_proj.weight`], qDim, [h]),
        gateUp: q8Weight(weights, [`${prefix(l)}mlp.gate_proj.weight`, `${prefix(l)}mlp.up_proj.weight`], h, [inter, inter]),
        down: q8Weight(weights, [`${prefix(l)}mlp.down_proj.weight`], inter, [h]),
      }),
      head: () => q8Weight(weights, [headName(c, weights)], h, [c.vocabSize]),
    },
  };
}

function buildQ8Segment(c: DecoderArchConfig, weights: ModelWeights, index: number): BuiltModel {
  if (!Number.isInteger(index) || index < 0 || index > 2 * c.numLayers) throw new Error(`segment ${index} does not exist (0..${2 * c.numLayers})`);
  const g = new GraphBuilder(`${c.architecture}-q8-segment-${index}`);
  const f32 = OnnxDataType.FLOAT;
  const eps = attrFloat(c.rmsNormEps);
  const norm = (name: string) => g.initializer(name, f32, [c.hiddenSize], toF32(requireWeight(weights, name)));
  const packed = (parts: string[]) => {
    const flat = g.constInt64([-1]);
    g.node('Concat', parts.map((p) => g.op('Reshape', [p, flat])), [SegmentOutputs.packed], { axis: attrInt(0) });
    g.output(SegmentOutputs.packed, f32, ['packed']);
    return g.build({ '': 23, 'com.microsoft': 1 });
  };
  const residualIn = g.input(SegmentInputs.hidden, f32, ['rows', c.hiddenSize]);
  if (index === 0) return packed([g.op('SimplifiedLayerNormalization', [residualIn, norm(`${prefix(0)}input_layernorm.weight`)], { axis: attrInt(-1), epsilon: eps })]);
  const x = g.input(SegmentInputs.attn, f32, ['rows', c.hiddenSize]);
  const skipNorm = (normName: string) => {
    const outs = g.node('SkipSimplifiedLayerNormalization', [x, residualIn, norm(normName)], [0, 1, 2, 3].map(() => g.fresh('skipnorm')), { epsilon: eps }, 'com.microsoft');
    return { normed: outs[0], residual: outs[3] };
  };
  const l = Math.floor((index - 1) / 2);
  const last = index === 2 * c.numLayers;
  const { normed, residual } = skipNorm(index % 2 === 1 ? `${prefix(l)}post_attention_layernorm.weight` : last ? 'model.norm.weight' : `${prefix(l + 1)}input_layernorm.weight`);
  if (!last) return packed([normed, residual]);
  const rows = g.input(SegmentInputs.logitsRows, OnnxDataType.INT64, ['picked']);
  g.node('Gather', [normed, rows], [SegmentOutputs.pickedHidden], { axis: attrInt(0) });
  g.output(SegmentOutputs.pickedHidden, f32, ['picked', c.hiddenSize]);
  return g.build({ '': 23, 'com.microsoft': 1 });
}
