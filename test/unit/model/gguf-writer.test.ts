// The GGUF writer: files it writes load back (llama and qwen2), in F32, F16 and Q8_0; bad files fail clearly.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomDecoderWeights } from '../../../src/model/dummy/random-weights';
import { dequantize } from '../../../src/model/gguf/dequant';
import { readGgufFile } from '../../../src/model/gguf/gguf-file';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import { ggufTokenizerMetadata, writeModelGguf } from '../../../src/model/gguf/write-model';
import { gv, writeGguf, type GgufTypedValue } from '../../../src/model/gguf/writer';
import type { DecoderArchConfig } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

const VOCAB = 64;
const tokenizer: Record<string, GgufTypedValue> = {
  'tokenizer.ggml.model': gv.str('llama'),
  'tokenizer.ggml.tokens': gv.strings(Array.from({ length: VOCAB }, (_, i) => `t${i}`)),
  'tokenizer.ggml.scores': gv.f32s(Array.from({ length: VOCAB }, (_, i) => -i)),
  'tokenizer.ggml.token_type': gv.i32s(new Array(VOCAB).fill(1)),
  'tokenizer.ggml.bos_token_id': gv.u32(1),
  'tokenizer.ggml.eos_token_id': gv.u32(2),
};

const llama: DecoderArchConfig = {
  architecture: 'llama',
  hiddenSize: 64,
  intermediateSize: 96,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  vocabSize: VOCAB,
  rmsNormEps: 1e-6,
  ropeTheta: 500000,
  ropeScaling: null,
  maxPositionEmbeddings: 4096,
  tieWordEmbeddings: false,
  attentionBias: false,
};
const qwen2: DecoderArchConfig = { ...llama, architecture: 'qwen2', tieWordEmbeddings: true, attentionBias: true, ropeTheta: 1000000 };

const maxAbsDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
const sameFloats = (a: Float32Array, b: Float32Array) => a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-gguf-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('chat templates in GGUF metadata', () => {
  it('reads tokenizer.chat_template and the named variants in tokenizer.chat_template.<name>', async () => {
    const path = join(dir, 'templates.gguf');
    const templates = { 'tokenizer.chat_template': gv.str('default'), 'tokenizer.chat_template.tool_use': gv.str('with tools') };
    writeModelGguf(path, llama, randomDecoderWeights(llama, 3), { ...tokenizer, ...templates }, 'f32');
    const model = await loadGgufModel(path, { loadWeights: false });
    expect(model.chatTemplates).toEqual({ default: 'default', named: { tool_use: 'with tools' } });
  });
});

describe('writeModelGguf -> loadGgufModel', () => {
  it.each([
    ['llama', llama],
    ['qwen2', qwen2],
  ] as const)('%s in F32 round-trips exactly (config, names, Q/K row order, biases)', async (_, config) => {
    const path = join(dir, `${config.architecture}-f32.gguf`);
    const source = randomDecoderWeights(config, 7);
    writeModelGguf(path, config, source, tokenizer, 'f32');
    const model = await loadGgufModel(path, { loadWeights: true });
    expect(model.config).toEqual({ ...config, rmsNormEps: expect.closeTo(config.rmsNormEps, 12) });
    expect(model.weights!.names().sort()).toEqual(source.map((s) => s.name).sort());
    for (const { name, shape, values } of source) {
      const got = model.weights!.get(name);
      expect(got.kind).toBe('f32');
      expect(got.shape).toEqual(shape);
      expect(got.kind === 'f32' && sameFloats(got.data, values())).toBe(true);
    }
    // In the file, llama Q rows are in llama.cpp's interleaved order; qwen2's are as they are.
    const file = await readGgufFile(path);
    const qInfo = file.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!;
    const raw = new Float32Array(readFileSync(path).buffer.slice(qInfo.offset, qInfo.offset + qInfo.byteLength));
    const q = source.find((s) => s.name === 'model.layers.0.self_attn.q_proj.weight')!.values();
    const hiddenSize = config.hiddenSize;
    const rawRow1 = raw.subarray(hiddenSize, 2 * hiddenSize);
    const expectedRow1 = config.architecture === 'llama' ? q.subarray((config.headDim / 2) * hiddenSize, (config.headDim / 2 + 1) * hiddenSize) : q.subarray(hiddenSize, 2 * hiddenSize);
    expect(sameFloats(rawRow1, expectedRow1)).toBe(true);
    expect((model.config as DecoderArchConfig).attentionBias).toBe(config.architecture === 'qwen2');
  });

  it('writes F16 matrices (within f16 rounding) and Q8_0 matrices kept quantized', async () => {
    const source = randomDecoderWeights(llama, 11);
    for (const type of ['f16', 'q8_0'] as const) {
      const path = join(dir, `llama-${type}.gguf`);
      writeModelGguf(path, llama, source, tokenizer, type);
      const weights = (await loadGgufModel(path, { loadWeights: true })).weights!;
      for (const { name, shape, values } of source) {
        const expected = values();
        const got = weights.get(name);
        if (shape.length === 1) {
          expect(got.kind).toBe('f32'); // norms stay F32
          continue;
        }
        const decoded = got.kind === 'f32' ? got.data : dequantize(got.format, got.data, expected.length);
        expect(got.kind).toBe(type === 'f16' ? 'f32' : 'quantized');
        const tolerance = type === 'f16' ? 0.0346 * 2 ** -11 : (0.0346 / 127) * 0.56; // |w| <= 0.02·√3
        expect(maxAbsDiff(decoded, expected)).toBeLessThanOrEqual(tolerance);
      }
    }
  });

  const stories = sharedModel('stories260K.gguf');
  needs(stories).it('copies a real tokenizer from another GGUF', async () => {
    const tokenizerMetadata = ggufTokenizerMetadata(await readGgufFile(stories));
    const path = join(dir, 'with-stories-tokenizer.gguf');
    writeModelGguf(path, { ...llama, vocabSize: 512 }, randomDecoderWeights({ ...llama, vocabSize: 512 }, 1), tokenizerMetadata, 'q8_0');
    const file = await readGgufFile(path);
    expect((file.metadata['tokenizer.ggml.tokens'] as string[]).slice(0, 4)).toEqual(['<unk>', '<s>', '</s>', '<0x00>']);
    expect(file.metadata['tokenizer.ggml.bos_token_id']).toBe(1);
  });
});

describe('GGUF load errors', () => {
  const tiny = (name: string, arch = 'llama') => {
    const path = join(dir, name);
    writeGguf(path, { 'general.architecture': gv.str(arch) }, [{ name: 'token_embd.weight', shape: [4, 32], type: 'f32', data: new Float32Array(128) }]);
    return path;
  };

  it('names an unsupported architecture', async () => {
    await expect(loadGgufModel(tiny('gpt2.gguf', 'gpt2'), { loadWeights: false })).rejects.toThrow(/architecture "gpt2" is not supported/);
  });

  it('names a tensor of an unsupported type', async () => {
    const path = join(dir, 'q4_1.gguf');
    writeModelGguf(path, llama, randomDecoderWeights(llama, 1), tokenizer, 'q8_0');
    // Patch blk.1.ffn_down.weight's type field (after name, n_dims, 2 dims) from Q8_0 (8) to Q4_1 (3).
    const bytes = readFileSync(path);
    const at = bytes.indexOf('blk.1.ffn_down.weight') + 'blk.1.ffn_down.weight'.length + 4 + 16;
    expect(bytes.readUInt32LE(at)).toBe(8);
    bytes.writeUInt32LE(3, at);
    writeFileSync(path, bytes);
    await expect(loadGgufModel(path, { loadWeights: false })).rejects.toThrow(/tensor blk\.1\.ffn_down\.weight has type Q4_1, which is not supported/);
  });

  it('names an unknown tensor, a missing one, and a truncated file', async () => {
    const unknown = join(dir, 'unknown.gguf');
    writeGguf(unknown, { 'general.architecture': gv.str('llama') }, [{ name: 'blk.0.ssm_conv.weight', shape: [32], type: 'f32', data: new Float32Array(32) }]);
    await expect(loadGgufModel(unknown, { loadWeights: false })).rejects.toThrow(/blk\.0\.ssm_conv\.weight/);

    const missing = join(dir, 'missing.gguf');
    const weights = randomDecoderWeights(llama, 1).filter((w) => w.name !== 'model.layers.1.mlp.up_proj.weight');
    writeModelGguf(missing, llama, weights, tokenizer, 'f32');
    await expect(loadGgufModel(missing, { loadWeights: true })).rejects.toThrow(/missing weight model\.layers\.1\.mlp\.up_proj\.weight/);

    const truncated = join(dir, 'truncated.gguf');
    writeModelGguf(truncated, llama, randomDecoderWeights(llama, 1), tokenizer, 'f32');
    const bytes = readFileSync(truncated);
    writeFileSync(truncated, bytes.subarray(0, bytes.length - 1000));
    await expect(loadGgufModel(truncated, { loadWeights: false })).rejects.toThrow(/runs past the end of the file/);
  });

  it('reads GGUF v2 and rejects other versions and non-GGUF files', async () => {
    const path = join(dir, 'llama-v2.gguf');
    writeModelGguf(path, llama, randomDecoderWeights(llama, 3), tokenizer, 'f32');
    const bytes = readFileSync(path);
    bytes.writeUInt32LE(2, 4);
    writeFileSync(path, bytes);
    expect((await loadGgufModel(path, { loadWeights: true })).config.numLayers).toBe(2);
    bytes.writeUInt32LE(4, 4);
    writeFileSync(path, bytes);
    await expect(loadGgufModel(path, { loadWeights: false })).rejects.toThrow(/GGUF|version/);
    const notGguf = join(dir, 'not.gguf');
    writeFileSync(notGguf, 'hello, this is not a model');
    await expect(loadGgufModel(notGguf, { loadWeights: false })).rejects.toThrow(/not a readable GGUF file/);
  });
});
