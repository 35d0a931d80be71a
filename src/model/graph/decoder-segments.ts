// The llama/qwen2 decoder cut at its attention: one ONNX graph per segment between two
// attention ops, so the runner's native paged attention (native/src/attention.cc) reads the KV
// cache in place between them. The segmented runner (runner/segmented-runner.ts) drives them.
//
// Why cut: onnxruntime-node cannot keep a tensor between runs or alias an output to an input, so
// attention inside a graph reads the past only after gathering it into fresh tensors (Gather +
// Concat + Attention's own copies), and at long contexts those copies dominate a step (see the
// comparison in docs/perf/decoder-graph.md). Every op outside attention is row-wise, so the
// segments take the step's tokens as packed rows [N, ·] (all sequences, prefill chunks and
// decodes alike, no padding) and only attention needs to know which rows belong together.
//
// Segment 0:        hidden (embedded rows) → input_layernorm → QKV → [q/k norm] → RoPE → packed (q, k, v)
// Segment l (1..L-1): attn (layer l-1's attention output), hidden (residual) → o_proj + residual →
//                   post_attention_layernorm → MLP + residual → input_layernorm(l) → QKV →
//                   [q/k norm] → RoPE → packed (q, k, v, residual)
// Segment L:        attn, hidden → o_proj, MLP, final norm → rows picked by logits_rows → lm_head
//                   [→ final logit soft-cap]
// Sandwich norms (gemma): o_proj → post_attention_layernorm → + residual → pre_feedforward_layernorm
//                   → MLP → post_feedforward_layernorm → + residual (the norms' own weights).
//
// RoPE: each segment takes the step's own cos/sin rows ([N, headDim/2], computed by the runner
// from its layer's table) with positions 0..N-1, so no segment stores a table of every position.
// What else differs per layer (attention window, scale, soft-cap, sinks; which RoPE table) is
// in `layers` (layer-options.ts), for the backends to pass to the native attention.
// Embedding lookup happens in the runner (one row copy per token, quantized rows dequantized).
import { GraphBuilder, BuiltModel, attrFloat, attrInt } from './graph-builder';
import { OnnxDataType } from './onnx-proto';
import { isMoeLayer } from '../moe/moe-config';
import { emitMoe } from './moe-graph';
import { emitLinear, LinearOptions } from './linear';
import { checkLinear, concatF32, requireWeight, toF32 } from './weights';
import { castTo, weightInitializer } from './compute-dtype';
import { rotaryAttributes, rotaryDimOf } from './rope';
import { decoderLayerOptions, type DecoderLayerOptions } from './layer-options';
import { emitQkNorm } from './qk-norm';
import { LoraGraph, type LoraGraphShape } from './lora-graph';
import type { LoraModule } from '../lora/lora-weights';
import type { DecoderArchConfig, ModelWeights } from '../types';

export const SegmentInputs = {
  hidden: 'hidden',
  attn: 'attn',
  ropeCos: 'rope_cos',
  ropeSin: 'rope_sin',
  ropePositions: 'rope_positions',
  logitsRows: 'logits_rows',
} as const;

export const SegmentOutputs = {
  /**
   * Segments 0..L-1: q [N, qDim], k [N, kvDim], v [N, kvDim] and (from segment 1) residual
   * [N, hidden], flattened and concatenated in that order (segmentParts finds them). One output
   * instead of four: onnxruntime-node copies every output into a fresh ArrayBuffer and builds
   * its tensor object, ~2 us an output; the Concat costs less (see segmented-runner.ts).
   */
  packed: 'packed',
  /** Segment L: [picked rows, vocab]. */
  logits: 'logits',
} as const;

/** The parts of a segment's packed output for `rows` rows (views into `packed`, no copies). */
export function segmentParts(config: Pick<DecoderArchConfig, 'numHeads' | 'numKvHeads' | 'headDim' | 'hiddenSize'>, packed: Float32Array, rows: number): { q: Float32Array; k: Float32Array; v: Float32Array; residual: Float32Array } {
  const q = rows * config.numHeads * config.headDim;
  const kv = rows * config.numKvHeads * config.headDim;
  return {
    q: packed.subarray(0, q),
    k: packed.subarray(q, q + kv),
    v: packed.subarray(q + kv, q + 2 * kv),
    residual: packed.subarray(q + 2 * kv, q + 2 * kv + rows * config.hiddenSize),
  };
}

export interface SegmentedDecoderOptions extends LinearOptions {
  /** Rows of the RoPE tables = the largest position + 1. */
  maxPositions: number;
  /** The server's max_model_len, which picks LongRoPE's table (rope.ts); default maxPositions. */
  maxModelLen?: number;
}

/**
 * What the segmented runner needs from an architecture: its graphs, the embedding it looks rows up
 * in, and per layer the attention's options and the rotary table whose rows it feeds each step.
 */
export interface SegmentedDecoder {
  /**
   * numLayers + 1 segments; build(i) makes segment i (built one at a time to bound peak memory),
   * with LoRA inputs after each adapted linear when `lora` is given (lora-graph.ts).
   */
  count: number;
  build(index: number, lora?: LoraGraphShape): BuiltModel;
  embeddingName: string;
  /** The runner multiplies each embedded row by this before layer 0 (gemma's sqrt(hidden)); 1 for none. */
  embeddingScale: number;
  /** numLayers entries: layer l's attention options and RoPE table. */
  layers: readonly DecoderLayerOptions[];
}

/** The llama-style family's segments (registered as the decoder descriptors' causalLmSegments). */
export function decoderSegments(config: DecoderArchConfig, weights: ModelWeights, opts: SegmentedDecoderOptions, feedForward?: FeedForward): SegmentedDecoder {
  return {
    count: config.numLayers + 1,
    build: (index, lora) => buildDecoderSegment(config, weights, index, opts, feedForward, lora),
    embeddingName: 'model.embed_tokens.weight',
    embeddingScale: config.embeddingScale ?? 1,
    layers: decoderLayerOptions(config, opts.maxPositions, opts.maxModelLen),
  };
}

/**
 * A family's own feed-forward block (gpt-oss's MoE) on the post-attention-normed rows `x` of
 * layer `layer`; returns its output [rows, hidden]. Absent: the llama family's MLP or MoE.
 */
export type FeedForward = (g: GraphBuilder, x: string, config: DecoderArchConfig, weights: ModelWeights, layer: number, opts: LinearOptions) => string;

/**
 * Builds segment `index` of `config.numLayers + 1` (see the file header); with `lora`, each dense
 * linear's output gets the adapters' products (a MoE block's experts and a family's own
 * feed-forward block are not adapted).
 */
export function buildDecoderSegment(config: DecoderArchConfig, weights: ModelWeights, index: number, opts: LinearOptions, feedForward?: FeedForward, lora?: LoraGraphShape): BuiltModel {
  const c = config;
  if (!Number.isInteger(index) || index < 0 || index > c.numLayers) throw new Error(`segment ${index} does not exist (0..${c.numLayers})`);
  const g = new GraphBuilder(`${c.architecture}-segment-${index}`);
  const f32 = OnnxDataType.FLOAT;
  const dtype = opts.dtype ?? 'float32';
  const weight = (name: string, dims: number[], values: Float32Array) => weightInitializer(g, dtype, name, dims, values);
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const prefix = (l: number) => `model.layers.${l}.`;
  const norm = (name: string) => weight(name, [c.hiddenSize], toF32(requireWeight(weights, name)));
  const eps = attrFloat(c.rmsNormEps);
  const last = index === c.numLayers;
  const loraGraph = lora ? new LoraGraph(g, lora, dtype) : null;
  /** y, plus the adapters' products for `module` where the segment has LoRA inputs. */
  const adapt = (module: LoraModule, x: string, y: string, inFeatures: number, outFeatures: number) => loraGraph?.adapt(module, x, y, inFeatures, outFeatures) ?? y;

  const hiddenIn = castTo(g, g.input(SegmentInputs.hidden, f32, ['rows', c.hiddenSize]), 'float32', dtype);
  let normed: string;
  let residual: string;
  if (index === 0) {
    normed = g.op('SimplifiedLayerNormalization', [hiddenIn, norm(`${prefix(0)}input_layernorm.weight`)], { axis: attrInt(-1), epsilon: eps });
    residual = hiddenIn;
  } else {
    const l = index - 1;
    const attn = castTo(g, g.input(SegmentInputs.attn, f32, ['rows', qDim]), 'float32', dtype);
    const oName = `${prefix(l)}self_attn.o_proj.weight`;
    const oWeight = requireWeight(weights, oName);
    checkLinear(oName, oWeight, qDim, c.hiddenSize);
    const oBiasName = `${prefix(l)}self_attn.o_proj.bias`;
    const oBias = weights.has(oBiasName) ? toF32(weights.get(oBiasName)) : null;
    const attnOut = adapt('o_proj', attn, emitLinear(g, attn, oName, [oWeight], oBias, qDim, opts), qDim, c.hiddenSize);
    const skip = (x: string, res: string, normName: string) =>
      g.node('SkipSimplifiedLayerNormalization', [x, res, norm(normName)], [0, 1, 2, 3].map(() => g.fresh('skipnorm')), { epsilon: eps }, 'com.microsoft');
    // Sandwich norms (gemma): each sublayer's output is normed before its residual add, and the MLP reads its own input norm.
    const sandwich = c.sandwichNorms === true;
    const outputNorm = (x: string, normName: string) =>
      sandwich ? g.op('SimplifiedLayerNormalization', [x, norm(`${prefix(l)}${normName}.weight`)], { axis: attrInt(-1), epsilon: eps }) : x;
    const mlpNorm = `${prefix(l)}${sandwich ? 'pre_feedforward_layernorm' : 'post_attention_layernorm'}.weight`;
    const [normed2, , , residual2] = skip(outputNorm(attnOut, 'post_attention_layernorm'), hiddenIn, mlpNorm);
    let mlpOut: string;
    if (feedForward) {
      mlpOut = feedForward(g, normed2, c, weights, l, opts);
    } else if (isMoeLayer(c, l)) {
      mlpOut = emitMoe(g, normed2, c, weights, l, opts);
    } else {
      const gateUp = ['gate_proj', 'up_proj'].map((n) => {
        const name = `${prefix(l)}mlp.${n}.weight`;
        const t = requireWeight(weights, name);
        checkLinear(name, t, c.hiddenSize, c.intermediateSize);
        return t;
      });
      const gu = emitLinear(g, normed2, `${prefix(l)}mlp.gate_up_proj.weight`, gateUp, null, c.hiddenSize, opts);
      const [gateRaw, upRaw] = g.node('Split', [gu, g.constInt64([c.intermediateSize, c.intermediateSize])], 2, { axis: attrInt(1) });
      const gate = adapt('gate_proj', normed2, gateRaw, c.hiddenSize, c.intermediateSize);
      const up = adapt('up_proj', normed2, upRaw, c.hiddenSize, c.intermediateSize);
      const activated = c.hiddenActivation === 'gelu_tanh' ? g.op('Gelu', [gate], { approximate: { s: 'tanh' } }) : g.op('Mul', [gate, g.op('Sigmoid', [gate])]);
      const act = g.op('Mul', [activated, up]);
      const downName = `${prefix(l)}mlp.down_proj.weight`;
      const down = requireWeight(weights, downName);
      checkLinear(downName, down, c.intermediateSize, c.hiddenSize);
      mlpOut = adapt('down_proj', act, emitLinear(g, act, downName, [down], null, c.intermediateSize, opts), c.intermediateSize, c.hiddenSize);
    }
    const outs = skip(outputNorm(mlpOut, 'post_feedforward_layernorm'), residual2, last ? 'model.norm.weight' : `${prefix(index)}input_layernorm.weight`);
    normed = outs[0];
    residual = outs[3];
  }

  if (last) {
    const rows = g.input(SegmentInputs.logitsRows, OnnxDataType.INT64, ['picked']);
    const picked = g.op('Gather', [normed, rows], { axis: attrInt(0) });
    const untied = !c.tieWordEmbeddings && weights.has('lm_head.weight');
    const headName = untied ? 'lm_head.weight' : 'model.embed_tokens.weight';
    const head = requireWeight(weights, headName);
    checkLinear(headName, head, c.hiddenSize, c.vocabSize);
    const logits = emitLinear(g, picked, untied ? headName : 'lm_head.tied.weight', [head], null, c.hiddenSize, opts);
    g.node('Identity', [softcap(g, castTo(g, logits, dtype, 'float32'), c.finalLogitSoftcap)], [SegmentOutputs.logits]);
    g.output(SegmentOutputs.logits, f32, ['picked', c.vocabSize]);
    return g.build({ '': 23, 'com.microsoft': 1 });
  }

  const l = index;
  const attnParts = ['q_proj', 'k_proj', 'v_proj'].map((n) => {
    const name = `${prefix(l)}self_attn.${n}.weight`;
    const t = requireWeight(weights, name);
    checkLinear(name, t, c.hiddenSize, n === 'q_proj' ? qDim : kvDim);
    return t;
  });
  const qkvBias = c.attentionBias ? concatF32(['q_proj', 'k_proj', 'v_proj'].map((n) => toF32(requireWeight(weights, `${prefix(l)}self_attn.${n}.bias`)))) : null;
  const qkv = emitLinear(g, normed, `${prefix(l)}self_attn.qkv_proj.weight`, attnParts, qkvBias, c.hiddenSize, opts);
  const [qLinear, kLinear, vLinear] = g.node('Split', [qkv, g.constInt64([qDim, kvDim, kvDim])], 3, { axis: attrInt(1) });
  const v = adapt('v_proj', normed, vLinear, c.hiddenSize, kvDim);
  const q = emitQkNorm(g, c, weights, weight, l, adapt('q_proj', normed, qLinear, c.hiddenSize, qDim), 'q_norm');
  const k = emitQkNorm(g, c, weights, weight, l, adapt('k_proj', normed, kLinear, c.hiddenSize, kvDim), 'k_norm');
  // RotaryEmbedding wants [1, N, heads * headDim] and a cache indexed by position: here the cache
  // holds exactly the step's rows, so row i is position i. A partial rotary config's tables are
  // rotaryDim/2 wide and the op passes each head's remaining dims through.
  const half = rotaryDimOf(c) / 2;
  const cos = castTo(g, g.input(SegmentInputs.ropeCos, f32, ['rows', half]), 'float32', dtype);
  const sin = castTo(g, g.input(SegmentInputs.ropeSin, f32, ['rows', half]), 'float32', dtype);
  const positions = g.input(SegmentInputs.ropePositions, OnnxDataType.INT64, [1, 'rows']);
  const rotary = (x: string, heads: number, width: number) => {
    const rows3d = g.op('Reshape', [x, g.constInt64([1, -1, width])]);
    const rotated = g.op('RotaryEmbedding', [rows3d, positions, cos, sin], rotaryAttributes(c, heads), 'com.microsoft');
    return g.op('Reshape', [rotated, g.constInt64([-1, width])]);
  };
  // One output holding every part (see SegmentOutputs.packed).
  const parts = [rotary(q, c.numHeads, qDim), rotary(k, c.numKvHeads, kvDim), v, ...(index > 0 ? [residual] : [])];
  const flat = g.constInt64([-1]);
  const packed = g.op('Concat', parts.map((p) => g.op('Reshape', [p, flat])), { axis: attrInt(0) });
  g.node('Identity', [castTo(g, packed, dtype, 'float32')], [SegmentOutputs.packed]);
  g.output(SegmentOutputs.packed, f32, ['packed']);
  return g.build({ '': 23, 'com.microsoft': 1 });
}

/** cap * tanh(x / cap) when cap > 0 (final_logit_softcapping; 1/cap as a float32 factor, as llama.cpp scales); x otherwise. */
function softcap(g: GraphBuilder, x: string, cap: number | undefined): string {
  if (!cap || !(cap > 0)) return x;
  return g.op('Mul', [g.op('Tanh', [g.op('Mul', [x, g.constFloat([1 / cap], [])])]), g.constFloat([cap], [])]);
}
