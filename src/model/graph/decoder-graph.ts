// Builds the llama/qwen2 decoder as an ONNX graph whose KV cache lives OUTSIDE the graph.
//
// Why this shape: onnxruntime-node wraps inputs without copying but copies every fetched output
// into a new JS buffer. So the runner owns the paged KV cache (one flat array per layer for K and
// for V, viewed as [numBlocks, blockSize*kvDim]) and feeds it as inputs; the graph gathers each
// sequence's past BLOCKS in block-table order (whole blocks: blockSize× fewer, contiguous copies
// than gathering slot rows), attends over past + new, and outputs only the logits rows asked for
// plus the new tokens' K/V (one tensor for all layers), which the runner scatters into its blocks.
//
// Inputs (B sequences, S new tokens each, NB past blocks each, padded; padding is masked):
//   input_ids [B,S] int64, position_ids [B,S] int64, past_blocks [B,NB] int64,
//   attn_mask [B,1,S,NB*blockSize+S] bool (true = may attend),
//   logits_rows [N] int64 (rows of B*S), cache_k.{l}, cache_v.{l} [numBlocks, blockSize*kvDim].
// Outputs: logits [N, vocab], new_kv [2*L*B, S, kvDim] (layer-major, K then V).
//
// Ops: past gathered as whole blocks; onnx Attention (opset 23) over the flat cache with a Concat of
// the new K/V; com.microsoft RotaryEmbedding with explicit position_ids; (Skip)SimplifiedLayerNormalization;
// fused QKV and gate/up GEMMs (MatMulNBits for GGML blocks). The same layer stack builds the pooling
// graph of a decoder served as an embedder or classifier. Why each, measured: docs/perf/decoder-graph.md.
//
// This graph is now the FALLBACK: when the native addon is built (npm install does it), the
// runner uses decoder-segments.ts instead, the same layers cut at attention with the native paged
// attention kernel (native/src/attention.cc) between the pieces. How the two compare, the options
// measured and not taken, and the decode-at-depth rounds: docs/perf/decoder-graph.md.
import { GraphBuilder, BuiltModel, attrFloat, attrInt } from './graph-builder';
import { OnnxDataType } from './onnx-proto';
import { isMoeLayer } from '../moe/moe-config';
import { emitMoe } from './moe-graph';
import { emitLinear, LinearOptions } from './linear';
import { attentionMask4d, declarePoolingInputs, emitPooled, poolHidden, positionRange } from './pooling-graph';
import { refuseInGraph } from './in-graph-limits';
import { emitQkNorm } from './qk-norm';
import { ropeTables } from './rope';
import { checkLinear, concatF32, requireWeight, toF32 } from './weights';
import { castTo, weightInitializer } from './compute-dtype';
import { DecoderArchConfig, ModelOutput, ModelWeights, WeightTensor } from '../types';

export const DecoderInputs = {
  inputIds: 'input_ids',
  positionIds: 'position_ids',
  pastBlocks: 'past_blocks',
  attnMask: 'attn_mask',
  logitsRows: 'logits_rows',
  cacheK: (layer: number) => `cache_k.${layer}`,
  cacheV: (layer: number) => `cache_v.${layer}`,
} as const;

export const DecoderOutputs = { logits: 'logits', newKv: 'new_kv' } as const;

export interface DecoderGraphOptions extends LinearOptions {
  /** Rows of the RoPE tables = the largest position + 1 the graph can see. */
  maxPositions: number;
  /** Tokens per KV block (the cache inputs are [numBlocks, blockSize * kvDim]). */
  blockSize: number;
}

export function buildDecoderGraph(config: DecoderArchConfig, weights: ModelWeights, opts: DecoderGraphOptions): BuiltModel {
  const c = config;
  refuseInGraph(c, opts.maxPositions, 'the in-graph decoder (--attention graph)');
  const g = new GraphBuilder(`${c.architecture}-decoder`);
  const f32 = OnnxDataType.FLOAT;
  const i64 = OnnxDataType.INT64;
  const kvDim = c.numKvHeads * c.headDim;

  const inputIds = g.input(DecoderInputs.inputIds, i64, ['batch', 'seq']);
  const positionIds = g.input(DecoderInputs.positionIds, i64, ['batch', 'seq']);
  const pastBlocks = g.input(DecoderInputs.pastBlocks, i64, ['batch', 'past_blocks']);
  const pastRowsShape = g.constInt64([0, -1, kvDim]);
  const attnMask = g.input(DecoderInputs.attnMask, OnnxDataType.BOOL, ['batch', 1, 'seq', 'total']);
  const logitsRows = g.input(DecoderInputs.logitsRows, i64, ['rows']);
  const newKv: string[] = [];

  // Weights and activations in --dtype; the KV cache and the logits stay f32 at the edges.
  const dtype = opts.dtype ?? 'float32';
  const stack = decoderStack(g, c, weights, opts, inputIds, positionIds, (l, qRot, kRot, v3) => {
    newKv.push(castTo(g, kRot, dtype, 'float32'), castTo(g, v3, dtype, 'float32'));
    const blockElems = opts.blockSize * kvDim;
    const past = (cache: string) =>
      castTo(g, g.op('Reshape', [g.op('Gather', [g.input(cache, f32, ['blocks', blockElems]), pastBlocks], { axis: attrInt(0) }), pastRowsShape]), 'float32', dtype);
    const keys = g.op('Concat', [past(DecoderInputs.cacheK(l)), kRot], { axis: attrInt(1) });
    const values = g.op('Concat', [past(DecoderInputs.cacheV(l)), v3], { axis: attrInt(1) });
    return g.op('Attention', [qRot, keys, values, attnMask], { q_num_heads: attrInt(c.numHeads), kv_num_heads: attrInt(c.numKvHeads) });
  });

  g.node('Concat', newKv, [DecoderOutputs.newKv], { axis: attrInt(0) });
  g.output(DecoderOutputs.newKv, f32, ['kv_rows', 'seq', kvDim]);

  const embedName = 'model.embed_tokens.weight';
  const picked = g.op('Gather', [stack.hidden, logitsRows], { axis: attrInt(0) });
  const untied = !c.tieWordEmbeddings && weights.has('lm_head.weight');
  const headTensor = untied ? requireWeight(weights, 'lm_head.weight') : stack.embedTensor;
  checkLinear(untied ? 'lm_head.weight' : embedName, headTensor, c.hiddenSize, c.vocabSize);
  // A tied f32 head shares the embedding Gather's initializer: Gemm(transB) reads [vocab, hidden]
  // as is. A quantized one (tied or not) stays quantized via emitLinear.
  const logits =
    untied || (headTensor.kind === 'quantized' && opts.keepQuantized)
      ? emitLinear(g, picked, untied ? 'lm_head.weight' : 'lm_head.tied.weight', [headTensor], null, c.hiddenSize, opts)
      : g.op('Gemm', [picked, stack.embed], { transB: attrInt(1) });
  g.node('Identity', [castTo(g, logits, dtype, 'float32')], [DecoderOutputs.logits]);
  g.output(DecoderOutputs.logits, f32, ['rows', c.vocabSize]);

  return g.build({ '': 23, 'com.microsoft': 1 });
}

/**
 * The decoder as a pooling graph (I/O: pooling-graph.ts): causal attention over each padded
 * sequence, the final normed hidden states pooled per sequence, then for 'classifier' the
 * `score` head of *ForSequenceClassification checkpoints (no bias).
 */
export function buildDecoderPoolingGraph(
  config: DecoderArchConfig,
  weights: ModelWeights,
  output: ModelOutput,
  opts: LinearOptions & { maxPositions: number },
): BuiltModel {
  const c = config;
  if (output.kind === 'logits' || output.kind === 'transcription') throw new Error('buildDecoderPoolingGraph builds pooling graphs only');
  refuseInGraph(c, opts.maxPositions, 'the decoder pooling graph');
  const g = new GraphBuilder(`${c.architecture}-pooling`);
  // Pooling graphs compute in float32 (--dtype float16 applies to generation).
  opts = { ...opts, dtype: 'float32' };
  const inputs = declarePoolingInputs(g);
  const positions = g.op('Expand', [g.op('Unsqueeze', [positionRange(g, inputs.seqLen, 0), g.constInt64([0])]), g.op('Shape', [inputs.inputIds])]);
  const mask = attentionMask4d(g, inputs, true);
  const stack = decoderStack(g, c, weights, opts, inputs.inputIds, positions, (_l, qRot, kRot, v3) =>
    g.op('Attention', [qRot, kRot, v3, mask], { q_num_heads: attrInt(c.numHeads), kv_num_heads: attrInt(c.numKvHeads) }),
  );
  const pooled = poolHidden(g, inputs, stack.hidden, c.hiddenSize);
  if (output.kind === 'pooled') {
    emitPooled(g, pooled, c.hiddenSize);
  } else {
    const score = requireWeight(weights, 'score.weight');
    checkLinear('score.weight', score, c.hiddenSize, output.numLabels);
    emitPooled(g, emitLinear(g, pooled, 'score.weight', [score], null, c.hiddenSize, opts), output.numLabels);
  }
  return g.build({ '': 23, 'com.microsoft': 1 });
}

/** Attention of one layer over RoPE'd [B,S,·] q/k and v; returns [B,S,heads*headDim]. */
type Attend = (layer: number, qRot: string, kRot: string, v3: string) => string;

/**
 * Embedding, every layer and the final RMSNorm, in the flat [B*S, hidden] stream; `attend` is
 * the only part that differs between the KV-cached graph and the pooling one.
 */
function decoderStack(
  g: GraphBuilder,
  c: DecoderArchConfig,
  weights: ModelWeights,
  opts: LinearOptions & { maxPositions: number },
  inputIds: string,
  positionIds: string,
  attend: Attend,
): { hidden: string; embed: string; embedTensor: WeightTensor } {
  const dtype = opts.dtype ?? 'float32';
  const weight = (name: string, dims: number[], values: Float32Array) => weightInitializer(g, dtype, name, dims, values);
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const layerPrefix = (l: number) => `model.layers.${l}.`;

  // Shapes used to move between the flat [B*S, hidden] stream and [B, S, features] for attention.
  const flatShape = g.constInt64([-1]);
  const batchSeq = g.op('Shape', [inputIds]);
  const batchSeqAny = g.op('Concat', [batchSeq, g.constInt64([-1])], { axis: attrInt(0) });
  const embedName = 'model.embed_tokens.weight';
  const embedTensor = requireWeight(weights, embedName);
  if (embedTensor.shape[0] !== c.vocabSize || embedTensor.shape[1] !== c.hiddenSize) {
    throw new Error(`'${embedName}' has shape [${embedTensor.shape.join(', ')}], expected [${c.vocabSize}, ${c.hiddenSize}]`);
  }
  const embed = weight(embedName, [c.vocabSize, c.hiddenSize], toF32(embedTensor));
  const hidden0 = g.op('Gather', [embed, g.op('Reshape', [inputIds, flatShape])], { axis: attrInt(0) });

  const { cos, sin } = ropeTables(c, opts.maxPositions);
  const cosCache = weight('rope.cos', [opts.maxPositions, c.headDim / 2], cos);
  const sinCache = weight('rope.sin', [opts.maxPositions, c.headDim / 2], sin);

  const norm = (name: string) => weight(name, [c.hiddenSize], toF32(requireWeight(weights, name)));
  const eps = attrFloat(c.rmsNormEps);

  let normed = g.op('SimplifiedLayerNormalization', [hidden0, norm(`${layerPrefix(0)}input_layernorm.weight`)], {
    axis: attrInt(-1),
    epsilon: eps,
  });
  let residual = hidden0;

  for (let l = 0; l < c.numLayers; l++) {
    const p = layerPrefix(l);
    const attnParts = ['q_proj', 'k_proj', 'v_proj'].map((n) => {
      const name = `${p}self_attn.${n}.weight`;
      const t = requireWeight(weights, name);
      checkLinear(name, t, c.hiddenSize, n === 'q_proj' ? qDim : kvDim);
      return t;
    });
    const qkvBias = c.attentionBias
      ? concatF32(['q_proj', 'k_proj', 'v_proj'].map((n) => toF32(requireWeight(weights, `${p}self_attn.${n}.bias`))))
      : null;
    const qkv = emitLinear(g, normed, `${p}self_attn.qkv_proj.weight`, attnParts, qkvBias, c.hiddenSize, opts);
    const [qRaw, kRaw, v] = g.node('Split', [qkv, g.constInt64([qDim, kvDim, kvDim])], 3, { axis: attrInt(1) });
    const q = emitQkNorm(g, c, weights, weight, l, qRaw, 'q_norm');
    const k = emitQkNorm(g, c, weights, weight, l, kRaw, 'k_norm');
    const to3d = (x: string) => g.op('Reshape', [x, batchSeqAny]);
    const rotary = (x: string, heads: number) =>
      g.op('RotaryEmbedding', [to3d(x), positionIds, cosCache, sinCache], { num_heads: attrInt(heads) }, 'com.microsoft');
    const attn = attend(l, rotary(q, c.numHeads), rotary(k, c.numKvHeads), to3d(v));
    const oName = `${p}self_attn.o_proj.weight`;
    const oWeight = requireWeight(weights, oName);
    checkLinear(oName, oWeight, qDim, c.hiddenSize);
    const attnOut = emitLinear(g, g.op('Reshape', [attn, g.constInt64([-1, qDim])]), oName, [oWeight], null, qDim, opts);

    const [normed2, , , residual2] = g.node(
      'SkipSimplifiedLayerNormalization',
      [attnOut, residual, norm(`${p}post_attention_layernorm.weight`)],
      ['', '', '', ''].map(() => g.fresh('skipnorm')),
      { epsilon: eps },
      'com.microsoft',
    );

    let mlpOut: string;
    if (isMoeLayer(c, l)) {
      mlpOut = emitMoe(g, normed2, c, weights, l, opts);
    } else {
      const gateUp = ['gate_proj', 'up_proj'].map((n) => {
        const name = `${p}mlp.${n}.weight`;
        const t = requireWeight(weights, name);
        checkLinear(name, t, c.hiddenSize, c.intermediateSize);
        return t;
      });
      const gu = emitLinear(g, normed2, `${p}mlp.gate_up_proj.weight`, gateUp, null, c.hiddenSize, opts);
      const [gate, up] = g.node('Split', [gu, g.constInt64([c.intermediateSize, c.intermediateSize])], 2, {
        axis: attrInt(1),
      });
      const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
      const downName = `${p}mlp.down_proj.weight`;
      const down = requireWeight(weights, downName);
      checkLinear(downName, down, c.intermediateSize, c.hiddenSize);
      mlpOut = emitLinear(g, act, downName, [down], null, c.intermediateSize, opts);
    }

    const nextNorm = l + 1 < c.numLayers ? `${layerPrefix(l + 1)}input_layernorm.weight` : 'model.norm.weight';
    const outs = g.node(
      'SkipSimplifiedLayerNormalization',
      [mlpOut, residual2, norm(nextNorm)],
      [0, 1, 2, 3].map(() => g.fresh('skipnorm')),
      { epsilon: eps },
      'com.microsoft',
    );
    normed = outs[0];
    residual = outs[3];
  }

  return { hidden: normed, embed, embedTensor };
}
