// GGUF loader on the real stories260K files: config, canonical names/shapes, Q/K row order.
import { openSync, readSync, closeSync } from 'node:fs';
import { decoderWeightSpecs } from '../../../src/model/architectures/decoder-family';
import type { DecoderArchConfig } from '../../../src/model/types';
import { dequantize } from '../../../src/model/gguf/dequant';
import { quantizeQ8_0 } from '../../../src/model/gguf/quantize';
import { readGgufFile } from '../../../src/model/gguf/gguf-file';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import type { WeightTensor } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

const stories = sharedModel('stories260K.gguf');
const storiesQ8 = sharedModel('stories260K-Q8_0.gguf');

const f32 = (t: WeightTensor): Float32Array => {
  if (t.kind !== 'f32') throw new Error('expected f32');
  return t.data;
};

/** The tensor exactly as stored in the file (GGUF row order). */
async function rawTensor(path: string, name: string): Promise<Float32Array> {
  const file = await readGgufFile(path);
  const info = file.tensors.find((t) => t.name === name)!;
  const out = new Float32Array(info.byteLength / 4);
  const fd = openSync(path, 'r');
  readSync(fd, new Uint8Array(out.buffer), 0, info.byteLength, info.offset);
  closeSync(fd);
  return out;
}

function matVec(w: Float32Array, rows: number, x: Float32Array): Float32Array {
  const cols = x.length;
  const y = new Float32Array(rows);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) y[r] += w[r * cols + c] * x[c];
  return y;
}

/** RoPE as llama.cpp applies it to GGUF rows: pairs (2i, 2i+1) of each head. */
function ropeInterleaved(v: Float32Array, headDim: number, pos: number, theta: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let h = 0; h < v.length; h += headDim) {
    for (let i = 0; i < headDim / 2; i++) {
      const a = pos * theta ** ((-2 * i) / headDim);
      const x0 = v[h + 2 * i], x1 = v[h + 2 * i + 1];
      out[h + 2 * i] = x0 * Math.cos(a) - x1 * Math.sin(a);
      out[h + 2 * i + 1] = x0 * Math.sin(a) + x1 * Math.cos(a);
    }
  }
  return out;
}

/** RoPE as HF llama applies it (rotate_half): pairs (i, i + headDim/2) of each head. */
function ropeRotateHalf(v: Float32Array, headDim: number, pos: number, theta: number): Float32Array {
  const out = new Float32Array(v.length);
  const half = headDim / 2;
  for (let h = 0; h < v.length; h += headDim) {
    for (let i = 0; i < half; i++) {
      const a = pos * theta ** ((-2 * i) / headDim);
      const x0 = v[h + i], x1 = v[h + i + half];
      out[h + i] = x0 * Math.cos(a) - x1 * Math.sin(a);
      out[h + i + half] = x1 * Math.cos(a) + x0 * Math.sin(a);
    }
  }
  return out;
}

/** Per (q head, kv head sharing it) attention logits q·k. */
function scores(q: Float32Array, k: Float32Array, numHeads: number, numKv: number, headDim: number): number[] {
  const out: number[] = [];
  for (let h = 0; h < numHeads; h++) {
    const kh = Math.floor(h / (numHeads / numKv));
    let s = 0;
    for (let d = 0; d < headDim; d++) s += q[h * headDim + d] * k[kh * headDim + d];
    out.push(s);
  }
  return out;
}

needs(stories).describe('GGUF loader: stories260K', () => {
  it('reads the architecture config', async () => {
    const { config, weights, chatTemplates } = await loadGgufModel(stories, { loadWeights: false });
    expect(weights).toBeNull();
    expect(chatTemplates).toEqual({ default: null, named: {} });
    expect(config).toEqual({
      architecture: 'llama',
      hiddenSize: 64,
      intermediateSize: 172,
      numLayers: 5,
      numHeads: 8,
      numKvHeads: 4,
      headDim: 8,
      vocabSize: 512,
      rmsNormEps: expect.closeTo(1e-5, 9),
      ropeTheta: 10000,
      ropeScaling: null,
      maxPositionEmbeddings: 2048,
      tieWordEmbeddings: false,
      attentionBias: false,
    });
  });

  it('maps every tensor to its canonical name and [out, in] shape', async () => {
    const { config, weights } = await loadGgufModel(stories, { loadWeights: true });
    const specs = decoderWeightSpecs(config as DecoderArchConfig);
    expect(weights!.names().sort()).toEqual(specs.map((s) => s.name).sort());
    for (const spec of specs) expect([spec.name, weights!.get(spec.name).shape]).toEqual([spec.name, spec.shape]);
    expect(weights!.get('model.embed_tokens.weight').shape).toEqual([512, 64]);
    expect(weights!.get('model.layers.0.mlp.down_proj.weight').shape).toEqual([64, 172]);
    expect(() => weights!.get('nope')).toThrow(/no weight "nope"/);
    // Non-permuted tensors are the file's bytes as they are.
    expect(f32(weights!.get('model.layers.2.mlp.up_proj.weight'))).toEqual(await rawTensor(stories, 'blk.2.ffn_up.weight'));
    expect(f32(weights!.get('model.layers.2.self_attn.v_proj.weight'))).toEqual(await rawTensor(stories, 'blk.2.attn_v.weight'));
  });

  it('un-permutes llama Q/K rows: rotate-half RoPE on the loaded weights gives llama.cpp attention scores', async () => {
    const { config, weights } = await loadGgufModel(stories, { loadWeights: true });
    const { numHeads, numKvHeads, headDim, ropeTheta, hiddenSize } = config as DecoderArchConfig;
    const x = Float32Array.from({ length: hiddenSize }, (_, i) => Math.sin(i * 1.7) + 0.1);
    for (const layer of [0, 4]) {
      const qRaw = await rawTensor(stories, `blk.${layer}.attn_q.weight`);
      const kRaw = await rawTensor(stories, `blk.${layer}.attn_k.weight`);
      const qHf = f32(weights!.get(`model.layers.${layer}.self_attn.q_proj.weight`));
      const kHf = f32(weights!.get(`model.layers.${layer}.self_attn.k_proj.weight`));
      expect(qHf).not.toEqual(qRaw); // the loader did move rows
      for (const [qPos, kPos] of [[7, 3], [40, 40], [100, 1]]) {
        const reference = scores(
          ropeInterleaved(matVec(qRaw, numHeads * headDim, x), headDim, qPos, ropeTheta),
          ropeInterleaved(matVec(kRaw, numKvHeads * headDim, x), headDim, kPos, ropeTheta),
          numHeads, numKvHeads, headDim,
        );
        const ours = scores(
          ropeRotateHalf(matVec(qHf, numHeads * headDim, x), headDim, qPos, ropeTheta),
          ropeRotateHalf(matVec(kHf, numKvHeads * headDim, x), headDim, kPos, ropeTheta),
          numHeads, numKvHeads, headDim,
        );
        ours.forEach((s, i) => expect(s).toBeCloseTo(reference[i], 4));
        // Without the un-permute, rotate-half RoPE would give different scores (at distance 0 RoPE cancels out).
        if (qPos === kPos) continue;
        const wrong = scores(
          ropeRotateHalf(matVec(qRaw, numHeads * headDim, x), headDim, qPos, ropeTheta),
          ropeRotateHalf(matVec(kRaw, numKvHeads * headDim, x), headDim, kPos, ropeTheta),
          numHeads, numKvHeads, headDim,
        );
        expect(Math.max(...wrong.map((s, i) => Math.abs(s - reference[i])))).toBeGreaterThan(1e-3);
      }
    }
  });

  needs(storiesQ8).it('moves whole quantized rows the same way (Q8_0 file vs F32 file)', async () => {
    const full = (await loadGgufModel(stories, { loadWeights: true })).weights!;
    const quant = (await loadGgufModel(storiesQ8, { loadWeights: true })).weights!;
    for (const name of ['model.layers.1.self_attn.q_proj.weight', 'model.layers.1.self_attn.k_proj.weight']) {
      const q = quant.get(name);
      expect(q.kind === 'quantized' && q.format).toBe('q8_0');
      if (q.kind !== 'quantized') throw new Error(`${name} was not kept quantized`);
      const reference = f32(full.get(name));
      const values = dequantize('q8_0', q.data, reference.length);
      const cols = q.shape[1];
      for (let row = 0; row < q.shape[0]; row++) {
        let amax = 0;
        for (let c = 0; c < cols; c++) amax = Math.max(amax, Math.abs(reference[row * cols + c]));
        for (let c = 0; c < cols; c++) {
          expect(Math.abs(values[row * cols + c] - reference[row * cols + c])).toBeLessThanOrEqual(0.0045 * amax);
        }
      }
    }
  });

  needs(storiesQ8).it("encodes Q8_0 byte-for-byte as llama.cpp's llama-quantize did", async () => {
    const full = (await loadGgufModel(stories, { loadWeights: true })).weights!;
    const quant = (await loadGgufModel(storiesQ8, { loadWeights: true })).weights!;
    let compared = 0;
    for (const name of quant.names()) {
      const q = quant.get(name);
      if (q.kind !== 'quantized') continue;
      const mine = quantizeQ8_0(f32(full.get(name)));
      expect([name, Buffer.from(mine).equals(Buffer.from(q.data))]).toEqual([name, true]);
      compared++;
    }
    expect(compared).toBeGreaterThan(20);
  });
});
