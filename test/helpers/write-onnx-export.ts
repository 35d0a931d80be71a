// Writes a llama decoder as an ONNX export in the Optimum "text-generation-with-past" layout
// (input_ids, attention_mask, position_ids, past_key_values.{i}.key|value [B, kvH, P, hd] ->
// logits [B, S, V], present.{i}.key|value), using only standard ONNX ops and a formulation
// unlike the runner's built graph (BNSH, explicit MatMul attention, KV heads repeated), so the
// export runner can be checked against the reference forward pass.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GraphBuilder, attrInt, attrInts } from '../../src/model/graph/graph-builder';
import { OnnxDataType } from '../../src/model/graph/onnx-proto';
import { DecoderArchConfig, ModelWeights } from '../../src/model/types';

export function writeOnnxExport(dir: string, config: DecoderArchConfig, weights: ModelWeights): string {
  const c = config;
  const g = new GraphBuilder('optimum-like', Infinity);
  const F = OnnxDataType.FLOAT;
  const hd = c.headDim;
  const group = c.numHeads / c.numKvHeads;
  const w = (name: string) => {
    const t = weights.get(name);
    if (t.kind !== 'f32') throw new Error('writeOnnxExport takes f32 weights');
    return t;
  };
  /** Initializer holding W^T ([in, out]) for MatMul. */
  const linearT = (name: string) => {
    const t = w(name);
    const [out, inp] = t.shape;
    const tr = new Float32Array(out * inp);
    for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) tr[i * out + o] = t.data[o * inp + i];
    return g.initializer(`${name}.T`, F, [inp, out], tr);
  };
  const vec = (name: string) => g.initializer(name, F, w(name).shape, w(name).data);
  const rmsNorm = (x: string, name: string) => {
    const meanSq = g.op('ReduceMean', [g.op('Mul', [x, x]), g.constInt64([-1])], { keepdims: attrInt(1) });
    const inv = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [meanSq, g.constFloat([c.rmsNormEps], [])])])]);
    return g.op('Mul', [g.op('Mul', [x, inv]), vec(name)]);
  };

  g.input('input_ids', OnnxDataType.INT64, ['batch', 'seq']);
  g.input('attention_mask', OnnxDataType.INT64, ['batch', 'total']);
  g.input('position_ids', OnnxDataType.INT64, ['batch', 'seq']);

  // rotate-half RoPE tables [maxPos, hd/2], gathered by position -> [B, 1, S, hd/2]
  const maxPos = c.maxPositionEmbeddings;
  const cosT = new Float32Array(maxPos * (hd / 2));
  const sinT = new Float32Array(maxPos * (hd / 2));
  for (let p = 0; p < maxPos; p++) {
    for (let i = 0; i < hd / 2; i++) {
      const angle = p / Math.pow(c.ropeTheta, (2 * i) / hd);
      cosT[p * (hd / 2) + i] = Math.cos(angle);
      sinT[p * (hd / 2) + i] = Math.sin(angle);
    }
  }
  const table = (name: string, data: Float32Array) =>
    g.op('Unsqueeze', [g.op('Gather', [g.initializer(name, F, [maxPos, hd / 2], data), 'position_ids']), g.constInt64([1])]);
  const cos = table('cos', cosT);
  const sin = table('sin', sinT);
  const rope = (x: string) => {
    const [x1, x2] = g.node('Split', [x, g.constInt64([hd / 2, hd / 2])], 2, { axis: attrInt(-1) });
    const a = g.op('Sub', [g.op('Mul', [x1, cos]), g.op('Mul', [x2, sin])]);
    const b = g.op('Add', [g.op('Mul', [x2, cos]), g.op('Mul', [x1, sin])]);
    return g.op('Concat', [a, b], { axis: attrInt(-1) });
  };

  // causal mask [S, T]: key j visible to query i when j <= T - S + i (attention_mask is all ones here)
  const total = g.op('Gather', [g.op('Shape', ['attention_mask']), g.constInt64([1], [])], { axis: attrInt(0) });
  const seqLen = g.op('Gather', [g.op('Shape', ['input_ids']), g.constInt64([1], [])], { axis: attrInt(0) });
  const one = g.constInt64([1], []);
  const qPos = g.op('Range', [g.op('Sub', [total, seqLen]), total, one]);
  const kPos = g.op('Range', [g.constInt64([0], []), total, one]);
  const visible = g.op('LessOrEqual', [g.op('Unsqueeze', [kPos, g.constInt64([0])]), g.op('Unsqueeze', [qPos, g.constInt64([1])])]);
  const mask = g.op('Where', [visible, g.constFloat([0], []), g.constFloat([-1e9], [])]);

  const heads = (x: string, n: number) => g.op('Transpose', [g.op('Reshape', [x, g.constInt64([0, 0, n, hd])])], { perm: attrInts([0, 2, 1, 3]) });
  const repeatKv = (x: string) =>
    group === 1
      ? x
      : g.op('Reshape', [
          g.op('Expand', [g.op('Unsqueeze', [x, g.constInt64([2])]), g.constInt64([1, 1, group, 1, 1])]),
          g.constInt64([0, c.numHeads, -1, hd]),
        ]);

  let x = g.op('Gather', [vec('model.embed_tokens.weight'), 'input_ids']);
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    const h = rmsNorm(x, `${p}input_layernorm.weight`);
    const q = rope(heads(g.op('MatMul', [h, linearT(`${p}self_attn.q_proj.weight`)]), c.numHeads));
    const k = rope(heads(g.op('MatMul', [h, linearT(`${p}self_attn.k_proj.weight`)]), c.numKvHeads));
    const v = heads(g.op('MatMul', [h, linearT(`${p}self_attn.v_proj.weight`)]), c.numKvHeads);
    const pastK = g.input(`past_key_values.${l}.key`, F, ['batch', c.numKvHeads, 'past', hd]);
    const pastV = g.input(`past_key_values.${l}.value`, F, ['batch', c.numKvHeads, 'past', hd]);
    const keys = g.node('Concat', [pastK, k], [`present.${l}.key`], { axis: attrInt(2) })[0];
    const values = g.node('Concat', [pastV, v], [`present.${l}.value`], { axis: attrInt(2) })[0];
    g.output(`present.${l}.key`, F, ['batch', c.numKvHeads, 'total', hd]);
    g.output(`present.${l}.value`, F, ['batch', c.numKvHeads, 'total', hd]);
    const kT = g.op('Transpose', [repeatKv(keys)], { perm: attrInts([0, 1, 3, 2]) });
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [q, kT]), g.constFloat([1 / Math.sqrt(hd)], [])]), mask]);
    const probs = g.op('Softmax', [scores], { axis: attrInt(-1) });
    const ctx = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [probs, repeatKv(values)])], { perm: attrInts([0, 2, 1, 3]) }), g.constInt64([0, 0, -1])]);
    x = g.op('Add', [x, g.op('MatMul', [ctx, linearT(`${p}self_attn.o_proj.weight`)])]);
    const h2 = rmsNorm(x, `${p}post_attention_layernorm.weight`);
    const gate = g.op('MatMul', [h2, linearT(`${p}mlp.gate_proj.weight`)]);
    const up = g.op('MatMul', [h2, linearT(`${p}mlp.up_proj.weight`)]);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, g.op('MatMul', [act, linearT(`${p}mlp.down_proj.weight`)])]);
  }
  const headName = c.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  g.node('MatMul', [rmsNorm(x, 'model.norm.weight'), linearT(headName)], ['logits']);
  g.output('logits', F, ['batch', 'seq', c.vocabSize]);

  const { modelBytes } = g.build({ '': 18 });
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  const path = join(dir, 'onnx', 'model.onnx');
  writeFileSync(path, modelBytes);
  return path;
}
