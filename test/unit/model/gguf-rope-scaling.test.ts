// RoPE scaling from GGUF: rope.scaling.* keys, and Llama 3.1's baked rope_freqs tensor mapped back
// to HF's llama3 rope_scaling. Also BF16 tensors in a GGUF.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomDecoderWeights } from '../../../src/model/dummy/random-weights';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import { llama3Divisors, ropeScalingFromFreqFactors } from '../../../src/model/gguf/rope-freqs';
import { ggufTensorName } from '../../../src/model/gguf/tensor-names';
import { archMetadata, writeModelGguf } from '../../../src/model/gguf/write-model';
import { gv, writeGguf, type GgufTypedValue } from '../../../src/model/gguf/writer';
import type { DecoderArchConfig } from '../../../src/model/types';

const config: DecoderArchConfig = {
  architecture: 'llama',
  hiddenSize: 256,
  intermediateSize: 64,
  numLayers: 1,
  numHeads: 2,
  numKvHeads: 1,
  headDim: 128,
  vocabSize: 32,
  rmsNormEps: 1e-5,
  ropeTheta: 500000,
  ropeScaling: null,
  maxPositionEmbeddings: 131072,
  tieWordEmbeddings: true,
  attentionBias: false,
};
const inv = Array.from({ length: 64 }, (_, i) => 1 / 500000 ** ((2 * i) / 128));
const tokenizer = { 'tokenizer.ggml.model': gv.str('llama'), 'tokenizer.ggml.tokens': gv.strings(Array.from({ length: 32 }, (_, i) => `t${i}`)) };

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-rope-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeWithExtras(path: string, extraMetadata: Record<string, GgufTypedValue>, ropeFreqs: Float32Array | null): void {
  const tensors = randomDecoderWeights(config, 1).map((t) => ({ name: ggufTensorName(t.name), shape: t.shape, type: 'f32' as const, data: t.values }));
  if (ropeFreqs) tensors.push({ name: 'rope_freqs.weight', shape: [ropeFreqs.length], type: 'f32', data: () => ropeFreqs });
  writeGguf(path, { ...archMetadata(config, 'rope-test', 'f32'), ...tokenizer, ...extraMetadata }, tensors);
}

describe('GGUF RoPE scaling', () => {
  it.each([
    { factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 }, // Llama 3.1
    { factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 }, // Llama 3.2
  ])('recovers llama3 scaling %o from the rope_freqs tensor', async (scaling) => {
    const path = join(dir, `llama3-${scaling.factor}.gguf`);
    writeWithExtras(path, {}, Float32Array.from(llama3Divisors(inv, scaling)));
    const model = await loadGgufModel(path, { loadWeights: true });
    expect((model.config as DecoderArchConfig).ropeScaling).toEqual({ rope_type: 'llama3', ...scaling });
    expect(model.weights!.has('rope_freqs.weight')).toBe(false);
  });

  it('keeps divisors that are not llama3 scaling as explicit freq_factors, and all-ones as none', () => {
    const odd = Float32Array.from(inv, (_, i) => 1 + (i % 3));
    expect(ropeScalingFromFreqFactors(odd, 500000, 128)).toEqual({ rope_type: 'freq_factors', freq_factors: Array.from(odd) });
    expect(ropeScalingFromFreqFactors(new Float32Array(64).fill(1), 500000, 128)).toEqual({ rope_type: 'default' });
  });

  it('reads rope.scaling.* keys (linear, yarn)', async () => {
    const path = join(dir, 'linear.gguf');
    writeWithExtras(path, { 'llama.rope.scaling.type': gv.str('linear'), 'llama.rope.scaling.factor': gv.f32(4) }, null);
    expect(((await loadGgufModel(path, { loadWeights: false })).config as DecoderArchConfig).ropeScaling).toEqual({ rope_type: 'linear', factor: 4 });
    writeWithExtras(path, {
      'llama.rope.scaling.type': gv.str('yarn'),
      'llama.rope.scaling.factor': gv.f32(2),
      'llama.rope.scaling.original_context_length': gv.u32(4096),
    }, null);
    expect(((await loadGgufModel(path, { loadWeights: false })).config as DecoderArchConfig).ropeScaling).toEqual({ rope_type: 'yarn', factor: 2, original_max_position_embeddings: 4096 });
  });
});

describe('BF16 GGUF tensors', () => {
  it('load as f32 with the bf16-rounded values', async () => {
    const path = join(dir, 'bf16.gguf');
    const source = randomDecoderWeights(config, 5);
    writeModelGguf(path, config, source, tokenizer, 'bf16');
    const weights = (await loadGgufModel(path, { loadWeights: true })).weights!;
    const q = weights.get('model.layers.0.self_attn.v_proj.weight');
    const original = source.find((s) => s.name === 'model.layers.0.self_attn.v_proj.weight')!.values();
    if (q.kind !== 'f32') throw new Error('f32 expected');
    let worst = 0;
    original.forEach((v, i) => (worst = Math.max(worst, Math.abs(q.data[i] - v) / Math.abs(v))));
    expect(worst).toBeLessThanOrEqual(2 ** -8); // bf16 keeps 8 significant bits
    expect(worst).toBeGreaterThan(0);
  });
});
