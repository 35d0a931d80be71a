// BERT-style encoders (BERT, XLM-RoBERTa) as a pooling graph (I/O: pooling-graph.ts), under the
// canonical BertModel weight names (`embeddings.*`, `encoder.layer.{i}.*`; loaders strip the
// `bert.` / `roberta.` prefixes of task checkpoints).
//
//   embeddings = LayerNorm(word[id] + position[offset + i] + token_type[type])
//   each layer: a = LayerNorm(x + Wo · MHA(Wq x, Wk x, Wv x))      (post-norm, all with biases)
//               x = LayerNorm(a + W2 · act(W1 a))
// Op choices: one Gemm for the fused QKV projection; onnx Attention (opset 23) over [B,S,H]
// with a [B,1,S,S] padding mask; GELU is the opset-20 Gelu op (erf or tanh form, as hidden_act
// says). Residuals are Add + LayerNormalization: measured (MiniLM shape, one intra-op thread,
// best of 20 on a loaded 2-core box) ~10% faster per forward than com.microsoft
// SkipLayerNormalization at 16x128 and 32x16 tokens; an explicit MatMul/Softmax attention was
// no faster than the Attention op within the noise. Again with two threads (bench/embed-forward,
// median of 40, interleaved): SkipLayerNormalization 8x16 8.78 ms against 8.00, 1x128 9.27 against
// 8.20, 1x16 the same. com.microsoft MultiHeadAttention (int32 key padding mask) in place of the
// Attention op: 16x128 129.9 / 149.0 ms median against 119.5 / 120.7, 1x128 10.59 / 9.07 against
// 8.84 / 9.14, 16 tokens the same.
// Against the transformers.js export of the same weights (bench/bert-onnx-export.ts: MatMul + Add,
// explicit softmax attention, LayerNormalization, erf GELU), after onnxruntime's optimizer (its
// profiler, 1x16, two threads, 40 runs): this graph runs 110 nodes per forward (24 Gemm, 13
// LayerNormalization, 6 Attention, 6 Gelu, 6 Split, 30 Reshape, 14 Add), the export 184 (42 MatMul
// and 6 FusedMatMul, 50 Add, 24 Transpose, 24 Reshape, 6 BiasGelu, 6 Softmax, 13 LayerNormalization:
// onnxruntime fuses no Attention, SkipLayerNormalization or Gemm out of it). Node time per forward
// (profiled, so inflated): Gemm 3.88 ms against MatMul + FusedMatMul 3.82, LayerNormalization 0.29
// against 0.21, Attention 0.19 against Transpose + Softmax + the score MatMuls' share, Gelu 0.16
// against BiasGelu 0.18; whole run 5.17 ms against 5.04. The projections (the weights streamed
// once per run) are ~75% of either forward, and the two spend the same on them. At 1x128: Gemm 7.51
// against MatMul 7.93 (the context MatMuls included), Attention 1.95 against FusedMatMul 0.50 +
// Softmax 0.31 + Transpose 0.39, Gelu 0.29 against BiasGelu 1.41, Add 0.14 against 0.97; whole run
// 10.8 against 13.0 ms.
// --dtype bfloat16 runs this encoder cut at its linears (encoder-segments.ts), which the addon's
// bfloat16 GEMM runs at about twice these Gemms' rate (runner/bf16-pooling-runner.ts).
import { BuiltModel, GraphBuilder, attrFloat, attrInt } from './graph-builder';
import { emitLinear, type LinearOptions } from './linear';
import { OnnxDataType } from './onnx-proto';
import { attentionMask4d, declarePoolingInputs, emitPooled, PoolingInputs, poolHidden, positionRange, type PoolingGraphInputs } from './pooling-graph';
import { concatF32, requireWeight, toF32 } from './weights';
import type { EncoderArchConfig, ModelWeights } from '../types';

/** Adds a head on the pooled [B,H] vector; returns its output and width. */
export type PooledHead = (g: GraphBuilder, pooled: string) => { value: string; size: number };

export function buildEncoderGraph(c: EncoderArchConfig, weights: ModelWeights, opts: LinearOptions, head: PooledHead | null): BuiltModel {
  const g = new GraphBuilder(`${c.architecture}-encoder`);
  const f32 = OnnxDataType.FLOAT;
  const h = c.hiddenSize;
  const inputs = declarePoolingInputs(g);
  const w = (name: string) => toF32(requireWeight(weights, name));
  const vector = (name: string) => g.initializer(name, f32, [h], w(name));
  const batchSeqHidden = g.op('Concat', [g.op('Shape', [inputs.inputIds]), g.constInt64([h])], { axis: attrInt(0) });
  const eps = attrFloat(c.layerNormEps);
  let x = emitEmbeddings(g, c, weights, inputs);

  const mask = attentionMask4d(g, inputs, false);
  const addNorm = (value: string, residual: string, prefix: string) =>
    g.op('LayerNormalization', [g.op('Add', [value, residual]), vector(`${prefix}.weight`), vector(`${prefix}.bias`)], { axis: attrInt(-1), epsilon: eps });

  for (let l = 0; l < c.numLayers; l++) {
    const p = `encoder.layer.${l}.`;
    const qkvParts = ['query', 'key', 'value'].map((n) => requireWeight(weights, `${p}attention.self.${n}.weight`));
    const qkvBias = concatF32(['query', 'key', 'value'].map((n) => w(`${p}attention.self.${n}.bias`)));
    const qkv = emitLinear(g, x, `${p}attention.self.qkv.weight`, qkvParts, qkvBias, h, opts);
    const attnOut = dense(g, weights, emitSelfAttention(g, c, qkv, mask, batchSeqHidden), `${p}attention.output.dense`, h, opts);
    const afterAttn = addNorm(attnOut, x, `${p}attention.output.LayerNorm`);
    const inner = activation(g, c, dense(g, weights, afterAttn, `${p}intermediate.dense`, h, opts));
    const out = dense(g, weights, inner, `${p}output.dense`, c.intermediateSize, opts);
    x = addNorm(out, afterAttn, `${p}output.LayerNorm`);
  }

  const pooled = poolHidden(g, inputs, x, h);
  const result = head ? head(g, pooled) : { value: pooled, size: h };
  emitPooled(g, result.value, result.size);
  return g.build({ '': 23, 'com.microsoft': 1 });
}

/** Multi-head attention of flat [B*S, 3H] fused QKV rows under the [B,1,S,S] mask: flat [B*S, H] rows. */
export function emitSelfAttention(g: GraphBuilder, c: EncoderArchConfig, qkv: string, mask: string, batchSeqHidden: string): string {
  const h = c.hiddenSize;
  const to3d = (flat: string) => g.op('Reshape', [flat, batchSeqHidden]);
  const [q, k, v] = g.node('Split', [qkv, g.constInt64([h, h, h])], 3, { axis: attrInt(1) });
  const attn = g.op('Attention', [to3d(q), to3d(k), to3d(v), mask], { q_num_heads: attrInt(c.numHeads), kv_num_heads: attrInt(c.numHeads) });
  return g.op('Reshape', [attn, g.constInt64([-1, h])]);
}

/**
 * LayerNorm(word[id] + position[offset + i] + token_type[type]) as flat [B*S, H] rows; declares
 * token_type_ids when the model has several types. With a single type its row is constant:
 * folded into the position table.
 */
export function emitEmbeddings(g: GraphBuilder, c: EncoderArchConfig, weights: ModelWeights, inputs: Pick<PoolingGraphInputs, 'inputIds' | 'seqLen'>): string {
  const f32 = OnnxDataType.FLOAT;
  const h = c.hiddenSize;
  const w = (name: string) => toF32(requireWeight(weights, name));
  const flatShape = g.constInt64([-1]);
  const batchSeqHidden = g.op('Concat', [g.op('Shape', [inputs.inputIds]), g.constInt64([h])], { axis: attrInt(0) });
  const word = g.initializer('embeddings.word_embeddings.weight', f32, [c.vocabSize, h], w('embeddings.word_embeddings.weight'));
  const positionTable = w('embeddings.position_embeddings.weight');
  const typeTable = w('embeddings.token_type_embeddings.weight');
  const positionRows = positionTable.length / h;
  const positions = g.initializer('embeddings.position_embeddings.weight', f32, [positionRows, h], c.typeVocabSize === 1 ? addRow(positionTable, typeTable, h) : positionTable);
  const tokens = g.op('Reshape', [g.op('Gather', [word, g.op('Reshape', [inputs.inputIds, flatShape])], { axis: attrInt(0) }), batchSeqHidden]);
  const positionIds = positionRange(g, inputs.seqLen, c.positionOffset);
  let embedded = g.op('Add', [tokens, g.op('Gather', [positions, positionIds], { axis: attrInt(0) })]); // [B,S,H]
  embedded = g.op('Reshape', [embedded, g.constInt64([-1, h])]);
  if (c.typeVocabSize > 1) {
    const typeIds = g.input(PoolingInputs.tokenTypeIds, OnnxDataType.INT64, ['batch', 'seq']);
    const types = g.initializer('embeddings.token_type_embeddings.weight', f32, [c.typeVocabSize, h], typeTable);
    embedded = g.op('Add', [embedded, g.op('Gather', [types, g.op('Reshape', [typeIds, flatShape])], { axis: attrInt(0) })]);
  }
  const norm = (name: string) => g.initializer(name, f32, [h], w(name));
  return g.op('LayerNormalization', [embedded, norm('embeddings.LayerNorm.weight'), norm('embeddings.LayerNorm.bias')], {
    axis: attrInt(-1),
    epsilon: attrFloat(c.layerNormEps),
  });
}

/** y = x Wᵀ + b for the `${prefix}.weight` / `${prefix}.bias` pair of a [out, in] linear layer. */
export function dense(g: GraphBuilder, weights: ModelWeights, x: string, prefix: string, inFeatures: number, opts: LinearOptions): string {
  const bias = toF32(requireWeight(weights, `${prefix}.bias`));
  return emitLinear(g, x, `${prefix}.weight`, [requireWeight(weights, `${prefix}.weight`)], bias, inFeatures, opts);
}

function activation(g: GraphBuilder, c: EncoderArchConfig, x: string): string {
  if (c.hiddenAct === 'relu') return g.op('Relu', [x]);
  return g.op('Gelu', [x], { approximate: { s: c.hiddenAct === 'gelu_tanh' ? 'tanh' : 'none' } });
}

/** table + row (broadcast over the table's rows), as a new array. */
export function addRow(table: Float32Array, row: Float32Array, width: number): Float32Array {
  const out = table.slice();
  for (let i = 0; i < out.length; i++) out[i] += row[i % width];
  return out;
}
