/** @jest-environment ./test/helpers/ort-environment.js */
// The segments' packed output: q, k, v (and from segment 1 the residual) in the order and at the
// offsets segmentParts reads them, checked against plain projections of the segment's input.
import * as ort from 'onnxruntime-node';
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { decoderSegments, SegmentInputs, SegmentOutputs, segmentParts } from '../../../src/model/graph/decoder-segments';
import { SyncSession } from '../../../src/model/runner/session';
import type { ModelWeights } from '../../../src/model/types';

const config = llamaConfig({ numLayers: 2 });
const weights = randomModel(config, 5).weights!;
const ROWS = 3;
const qDim = config.numHeads * config.headDim;
const kvDim = config.numKvHeads * config.headDim;
const half = config.headDim / 2;

function f32(w: ModelWeights, name: string): Float32Array {
  const t = w.get(name);
  if (t.kind !== 'f32') throw new Error(`${name} is not float32`);
  return t.data;
}

/** Row r of x [rows, in] times W [out, in] transposed. */
function project(x: Float32Array, w: Float32Array, rows: number, out: number): Float64Array {
  const inp = x.length / rows;
  const y = new Float64Array(rows * out);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < out; o++) {
      let sum = 0;
      for (let i = 0; i < inp; i++) sum += w[o * inp + i] * x[r * inp + i];
      y[r * out + o] = sum;
    }
  }
  return y;
}

function rmsNormRows(x: Float32Array | Float64Array, w: Float32Array, rows: number): Float32Array {
  const width = w.length;
  const y = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < width; i++) ss += x[r * width + i] ** 2;
    const inv = 1 / Math.sqrt(ss / width + config.rmsNormEps);
    for (let i = 0; i < width; i++) y[r * width + i] = x[r * width + i] * inv * w[i];
  }
  return y;
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

/** Runs segment `index` on ROWS rows of `hidden` with a zero attention input and RoPE as the identity (cos 1, sin 0). */
function runSegment(index: number, hidden: Float32Array): Float32Array {
  const decoder = decoderSegments(config, weights, { maxPositions: 16, keepQuantized: true });
  const session = SyncSession.create(decoder.build(index), { device: 'cpu', intraOpThreads: 1 });
  try {
    const feeds: Record<string, ort.Tensor> = {
      [SegmentInputs.hidden]: new ort.Tensor('float32', hidden, [ROWS, config.hiddenSize]),
      [SegmentInputs.ropeCos]: new ort.Tensor('float32', new Float32Array(ROWS * half).fill(1), [ROWS, half]),
      [SegmentInputs.ropeSin]: new ort.Tensor('float32', new Float32Array(ROWS * half), [ROWS, half]),
      [SegmentInputs.ropePositions]: new ort.Tensor('int64', BigInt64Array.from({ length: ROWS }, (_, i) => BigInt(i)), [1, ROWS]),
    };
    if (index > 0) feeds[SegmentInputs.attn] = new ort.Tensor('float32', new Float32Array(ROWS * qDim), [ROWS, qDim]);
    const out = session.run(feeds);
    expect(Object.keys(out)).toEqual([SegmentOutputs.packed]);
    return out[SegmentOutputs.packed].data as Float32Array;
  } finally {
    void session.release();
  }
}

const hidden = Float32Array.from({ length: ROWS * config.hiddenSize }, (_, i) => Math.sin(i * 0.37));
const layer = (l: number, name: string) => `model.layers.${l}.${name}`;

it('segmentParts gives contiguous views of q, k, v and the residual, in that order', () => {
  const packed = Float32Array.from({ length: ROWS * (qDim + 2 * kvDim + config.hiddenSize) }, (_, i) => i);
  const parts = segmentParts(config, packed, ROWS);
  expect([parts.q[0], parts.k[0], parts.v[0], parts.residual[0]]).toEqual([0, ROWS * qDim, ROWS * (qDim + kvDim), ROWS * (qDim + 2 * kvDim)]);
  expect([parts.q.length, parts.k.length, parts.v.length, parts.residual.length]).toEqual([ROWS * qDim, ROWS * kvDim, ROWS * kvDim, ROWS * config.hiddenSize]);
  for (const part of Object.values(parts)) expect(part.buffer).toBe(packed.buffer);
});

it("segment 0's packed output holds the input layer norm's q, k and v projections", () => {
  const packed = runSegment(0, hidden);
  expect(packed.length).toBe(ROWS * (qDim + 2 * kvDim));
  const normed = rmsNormRows(hidden, f32(weights, layer(0, 'input_layernorm.weight')), ROWS);
  const parts = segmentParts(config, packed, ROWS);
  expect(maxDiff(parts.q, project(normed, f32(weights, layer(0, 'self_attn.q_proj.weight')), ROWS, qDim))).toBeLessThan(1e-4);
  expect(maxDiff(parts.k, project(normed, f32(weights, layer(0, 'self_attn.k_proj.weight')), ROWS, kvDim))).toBeLessThan(1e-4);
  expect(maxDiff(parts.v, project(normed, f32(weights, layer(0, 'self_attn.v_proj.weight')), ROWS, kvDim))).toBeLessThan(1e-4);
  expect(parts.residual.length).toBe(0);
});

it("segment 1's packed output ends with the residual after layer 0's MLP, and its v is projected from it", () => {
  const packed = runSegment(1, hidden);
  expect(packed.length).toBe(ROWS * (qDim + 2 * kvDim + config.hiddenSize));
  // Zero attention: layer 0's residual stream is the input plus its MLP of the post-attention norm.
  const normed = rmsNormRows(hidden, f32(weights, layer(0, 'post_attention_layernorm.weight')), ROWS);
  const gate = project(normed, f32(weights, layer(0, 'mlp.gate_proj.weight')), ROWS, config.intermediateSize);
  const up = project(normed, f32(weights, layer(0, 'mlp.up_proj.weight')), ROWS, config.intermediateSize);
  const act = Float32Array.from(gate, (g, i) => (g / (1 + Math.exp(-g))) * up[i]);
  const mlp = project(act, f32(weights, layer(0, 'mlp.down_proj.weight')), ROWS, config.hiddenSize);
  const residual = Float32Array.from(hidden, (h, i) => h + mlp[i]);
  const parts = segmentParts(config, packed, ROWS);
  expect(maxDiff(parts.residual, residual)).toBeLessThan(1e-4);
  const normed1 = rmsNormRows(residual, f32(weights, layer(1, 'input_layernorm.weight')), ROWS);
  expect(maxDiff(parts.v, project(normed1, f32(weights, layer(1, 'self_attn.v_proj.weight')), ROWS, kvDim))).toBeLessThan(1e-4);
});
