// BERT-style encoders (BERT, XLM-RoBERTa) as a pooling graph (I/O: pooling-graph.ts), under the
// canonical BertModel weight names (`embeddings.*`, `encoder.layer.{i}.*`; loaders strip the
// `bert.` / `roberta.` prefixes of task checkpoints).
//
//   embeddings = LayerNorm(word[id] + position[offset + i] + token_type[type])
//   each layer: a = LayerNorm(x + Wo · MHA(Wq x, Wk x, Wv x))      (post-norm, all with biases)
//               x = LayerNorm(a + W2 · act(W1 a))
// Op choices: one Gemm for the fused QKV projection; onnx Attention (opset 23) over [B,S,H]
// with a [B,1,S,S] padding mask; GELU is the opset-20 Gelu op (erf or tanh form, as hidden_act
// says). Residuals are Add + LayerNormalization (faster than SkipLayerNormalization here); the
// measurements, and the comparison with the transformers.js export: docs/perf/onnxruntime-sessions.md.
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
