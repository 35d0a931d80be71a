// Writes a BERT checkpoint's weights as the ONNX file an Optimum export gives transformers.js
// (onnx/model.onnx: input_ids, attention_mask, token_type_ids -> last_hidden_state), traced the
// way PyTorch's BertModel computes: MatMul + Add projections, explicit softmax attention with an
// additive mask, LayerNormalization, erf GELU. onnxruntime fuses these patterns itself, as it does
// for any exported BERT. Used only by `npm run bench:embed` so the peer runs the same weights.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { GraphBuilder, attrFloat, attrInt } from '../src/model/graph/graph-builder';
import { OnnxDataType } from '../src/model/graph/onnx-proto';
import type { EncoderArchConfig } from '../src/model/types';

export function writeBertOnnxExport(path: string, c: EncoderArchConfig, weight: (name: string) => Float32Array): void {
  const g = new GraphBuilder('bert-export', Infinity); // one self-contained file
  const f32 = OnnxDataType.FLOAT;
  const i64 = OnnxDataType.INT64;
  const h = c.hiddenSize;
  const hd = h / c.numHeads;
  const ids = g.input('input_ids', i64, ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', i64, ['batch_size', 'sequence_length']);
  const types = g.input('token_type_ids', i64, ['batch_size', 'sequence_length']);
  const table = (name: string, rows: number) => g.initializer(name, f32, [rows, h], weight(name));
  const vector = (name: string) => g.initializer(name, f32, [h], weight(name));
  // PyTorch's Linear exports as MatMul with the transposed weight, then Add of the bias.
  const linear = (x: string, name: string, out: number, inp: number) =>
    g.op('Add', [g.op('MatMul', [x, g.initializer(`${name}.weight.T`, f32, [inp, out], transpose(weight(`${name}.weight`), out, inp))]), g.initializer(`${name}.bias`, f32, [out], weight(`${name}.bias`))]);
  const layerNorm = (x: string, name: string) => g.op('LayerNormalization', [x, vector(`${name}.weight`), vector(`${name}.bias`)], { axis: attrInt(-1), epsilon: attrFloat(c.layerNormEps) });

  const seqLen = g.op('Squeeze', [g.op('Slice', [g.op('Shape', [ids]), g.constInt64([1]), g.constInt64([2])]), g.constInt64([0])]);
  const positions = g.op('Range', [g.constInt64([0], []), seqLen, g.constInt64([1], [])]);
  const embedded = g.op('Add', [
    g.op('Add', [g.op('Gather', [table('embeddings.word_embeddings.weight', c.vocabSize), ids]), g.op('Gather', [table('embeddings.position_embeddings.weight', c.maxPositionEmbeddings), positions])]),
    g.op('Gather', [table('embeddings.token_type_embeddings.weight', c.typeVocabSize), types]),
  ]);
  let x = layerNorm(embedded, 'embeddings.LayerNorm');
  // (1 - mask) * finfo(float32).min, broadcast over heads and queries.
  const additiveMask = g.op('Mul', [g.op('Sub', [g.constFloat([1], []), g.op('Cast', [g.op('Unsqueeze', [mask, g.constInt64([1, 2])])], { to: attrInt(f32) })]), g.constFloat([-3.4028234663852886e38], [])]);
  const heads = g.constInt64([0, 0, c.numHeads, hd]);
  for (let l = 0; l < c.numLayers; l++) {
    const p = `encoder.layer.${l}.`;
    const split = (name: string, perm: number[]) => g.op('Transpose', [g.op('Reshape', [linear(x, `${p}attention.self.${name}`, h, h), heads])], { perm: { ints: perm } });
    const q = split('query', [0, 2, 1, 3]);
    const k = split('key', [0, 2, 3, 1]);
    const v = split('value', [0, 2, 1, 3]);
    const scores = g.op('Add', [g.op('Div', [g.op('MatMul', [q, k]), g.constFloat([Math.sqrt(hd)], [])]), additiveMask]);
    const context = g.op('MatMul', [g.op('Softmax', [scores], { axis: attrInt(-1) }), v]);
    const merged = g.op('Reshape', [g.op('Transpose', [context], { perm: { ints: [0, 2, 1, 3] } }), g.constInt64([0, 0, h])]);
    const attention = layerNorm(g.op('Add', [linear(merged, `${p}attention.output.dense`, h, h), x]), `${p}attention.output.LayerNorm`);
    const inner = linear(attention, `${p}intermediate.dense`, c.intermediateSize, h);
    const gelu = g.op('Mul', [g.op('Mul', [inner, g.constFloat([0.5], [])]), g.op('Add', [g.op('Erf', [g.op('Div', [inner, g.constFloat([Math.SQRT2], [])])]), g.constFloat([1], [])])]);
    x = layerNorm(g.op('Add', [linear(gelu, `${p}output.dense`, h, c.intermediateSize), attention]), `${p}output.LayerNorm`);
  }
  g.node('Identity', [x], ['last_hidden_state']);
  g.output('last_hidden_state', f32, ['batch_size', 'sequence_length', h]);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, g.build({ '': 17 }).modelBytes);
}

function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = w[r * cols + c];
  return out;
}
