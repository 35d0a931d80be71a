/** @jest-environment ./test/helpers/ort-environment.js */
// gpt-oss on seeded random weights (a gpt-oss-20b shape scaled down: sliding window 4 under a
// 13-token prompt, 4 experts top-2, sinks, YaRN as shipped) loaded from its GGUF file and from
// an HF directory laid out as openai ships it, run by the segmented runner (onnx-segments, the
// native attention with window and sinks) against the float64 reference.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gptOssConfig, randomGptOssWeights, writeGptOssGguf } from '../../../bench/random-gpt-oss';
import { readGgufFile } from '../../../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata } from '../../../src/model/gguf/write-model';
import type { GptOssArchConfig } from '../../../src/model/gpt-oss/gpt-oss-config';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import type { LoadedModel } from '../../../src/model/types';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceGptOss, type MoeEvent } from '../../helpers/reference-gpt-oss';
import { BlockAllocator, NATIVE_ADDON, maxAbsDiff, runChunked } from '../../helpers/runner-driver';
import { writeGptOssHfDir } from '../../helpers/write-gpt-oss-hf-dir';

const STORIES = sharedModel('stories260K.gguf');
const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301];
const config = gptOssConfig();
const weights = randomGptOssWeights(config, 7);

/** Largest |a - b| over every position, relative to the largest |b|. */
function relativeError(got: Float32Array[], want: Float32Array[]): number {
  const scale = Math.max(...want.map((w) => Math.max(...w.map(Math.abs))));
  return Math.max(...got.map((g, i) => maxAbsDiff(g, want[i]))) / scale;
}

async function runModel(model: LoadedModel, chunk: number, extra: Record<string, unknown> = {}): Promise<Float32Array[]> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1, attention: 'native', ...extra });
  try {
    return await runChunked(runner, PROMPT, chunk, new BlockAllocator(runner).table(PROMPT.length));
  } finally {
    await runner.dispose();
  }
}

const load = (model: string) => loadModel(loadOptions(model, { skipTokenizer: true }));

describe('gpt-oss reference', () => {
  const events: MoeEvent[] = [];
  const expected = referenceGptOss(config, weights, PROMPT, (e) => events.push(e));

  it('routes tokens to different experts and clamps SwiGLU inputs (so the test sees both)', () => {
    for (let l = 0; l < config.numLayers; l++) {
      const sets = new Set(events.filter((e) => e.layer === l).map((e) => [...e.experts].sort().join(',')));
      expect(sets.size).toBeGreaterThan(1);
    }
    expect(events.reduce((n, e) => n + e.clamped, 0)).toBeGreaterThan(0);
  });

  it('depends on the window and the sinks (a runner ignoring either would fail)', () => {
    const unwindowed = referenceGptOss({ ...config, slidingWindow: 0 }, weights, PROMPT);
    expect(relativeError(unwindowed, expected)).toBeGreaterThan(1e-2);
    const sinkless = { ...weights, get: (n: string) => (n.endsWith('.sinks') ? { kind: 'f32' as const, shape: [config.numHeads], data: new Float32Array(config.numHeads).fill(-1e30) } : weights.get(n)) };
    expect(relativeError(referenceGptOss(config, sinkless, PROMPT), expected)).toBeGreaterThan(1e-2);
  });
});

needs(STORIES, NATIVE_ADDON).describe('gpt-oss forward: GGUF and HF directory', () => {
  let dir: string;
  let tokenizerMetadata: ReturnType<typeof ggufTokenizerMetadata>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpt-oss-'));
    tokenizerMetadata = ggufTokenizerMetadata(await readGgufFile(STORIES));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('F32 GGUF: logits at every position match the reference (prefill chunks of 5, then decodes)', async () => {
    const path = join(dir, 'gpt-oss.gguf');
    writeGptOssGguf(path, config, weights, tokenizerMetadata);
    const model = await load(path);
    expect(model.config).toMatchObject({ architecture: 'gpt-oss', slidingWindow: 4, layerTypes: ['sliding_attention', 'full_attention'], numExperts: 4, numExpertsPerToken: 2 });
    const want = referenceGptOss(model.config as GptOssArchConfig, weights, PROMPT);
    expect(relativeError(await runModel(model, 5), want)).toBeLessThan(1e-5);
    expect(relativeError(await runModel(model, 1), want)).toBeLessThan(1e-5);
  });

  it('HF directory with fused experts gives the output of its GGUF conversion', async () => {
    const hf = join(dir, 'hf');
    writeGptOssHfDir(hf, config, weights, { tokenizerMetadata: plain(tokenizerMetadata) });
    const gguf = join(dir, 'converted.gguf');
    writeGptOssGguf(gguf, config, weights, tokenizerMetadata);
    const [fromHf, fromGguf] = [await runModel(await load(hf), 5), await runModel(await load(gguf), 5)];
    expect(relativeError(fromHf, fromGguf)).toBeLessThan(1e-6);
  });

  it('HF directory in bfloat16 (transformers\' dequantized layout) follows the reference on its loaded weights', async () => {
    const hf = join(dir, 'hf-bf16');
    writeGptOssHfDir(hf, config, weights, { tokenizerMetadata: plain(tokenizerMetadata), dtype: 'BF16' });
    const model = await load(hf);
    const want = referenceGptOss(model.config as GptOssArchConfig, model.weights!, PROMPT);
    expect(relativeError(await runModel(model, 5), want)).toBeLessThan(1e-5);
    // bfloat16 rounding is real: the float32 weights give other logits.
    expect(relativeError(want, referenceGptOss(config, weights, PROMPT))).toBeGreaterThan(1e-4);
  });

  it('MXFP4 experts, held as Q8_0: the GGUF file follows the reference on its dequantized weights, and the HF blocks/scales give the same output', async () => {
    const gguf = join(dir, 'mxfp4.gguf');
    writeGptOssGguf(gguf, config, weights, tokenizerMetadata, 'mxfp4');
    const model = await load(gguf);
    expectQ8Experts(model);
    const fromGguf = await runModel(model, 5);
    expect(relativeError(fromGguf, referenceGptOss(model.config as GptOssArchConfig, model.weights!, PROMPT))).toBeLessThan(1e-5);
    // QMoE over the Q8_0 experts gives the float MoE's output on the same values (keepQuantized false).
    expect(relativeError(await runModel(model, 5, { keepQuantized: false }), fromGguf)).toBeLessThan(1e-6);
    // The quantization is real: the float weights give other logits.
    expect(relativeError(fromGguf, referenceGptOss(config, weights, PROMPT))).toBeGreaterThan(1e-3);
    const hf = join(dir, 'hf-mxfp4');
    writeGptOssHfDir(hf, config, weights, { tokenizerMetadata: plain(tokenizerMetadata), mxfp4: true });
    const fromHf = await load(hf);
    expect((fromHf.config as GptOssArchConfig).expertStorage).toBe('mxfp4');
    expectQ8Experts(fromHf);
    expect(relativeError(await runModel(fromHf, 5), fromGguf)).toBeLessThan(1e-6);
  });

  it('MXFP4 experts whose block scales are below fp16 load widened to float32 and still follow the reference', async () => {
    const tiny = 'model.layers.0.mlp.experts.up_proj.weight';
    const source = weights.get(tiny);
    if (source.kind !== 'f32') throw new Error('random weights are float32');
    // 2^-40 puts every block's scale below 2^-24, which no Q8_0 block can hold.
    const scaled = { ...weights, get: (n: string) => (n === tiny ? { ...source, data: source.data.map((v) => v * 2 ** -40) } : weights.get(n)) };
    const gguf = join(dir, 'mxfp4-tiny.gguf');
    writeGptOssGguf(gguf, config, scaled, tokenizerMetadata, 'mxfp4');
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const model = await load(gguf);
    warn.mockRestore();
    expect(model.weights!.get(tiny).kind).toBe('f32');
    expect(model.weights!.get('model.layers.0.mlp.experts.gate_proj.weight').kind).toBe('quantized');
    const want = referenceGptOss(model.config as GptOssArchConfig, model.weights!, PROMPT);
    expect(relativeError(await runModel(model, 5), want)).toBeLessThan(1e-5);
  });

  it('Q8_0 matrices with MXFP4 experts (a llama-quantize mix) follow the reference on the loaded weights', async () => {
    const gguf = join(dir, 'q8-mxfp4.gguf');
    writeGptOssGguf(gguf, config, weights, tokenizerMetadata, 'mxfp4', 'q8_0');
    const model = await load(gguf);
    expect(model.weights!.get('model.layers.0.self_attn.q_proj.weight').kind).toBe('quantized');
    const want = referenceGptOss(model.config as GptOssArchConfig, model.weights!, PROMPT);
    // MatMulNBits with float32 activations (accuracy level 1) is exact; the default level 4 rounds them to int8.
    expect(relativeError(await runModel(model, 5, { quantAccuracyLevel: 1 }), want)).toBeLessThan(1e-5);
    expect(relativeError(await runModel(model, 5), want)).toBeLessThan(2e-2);
  });

  it('HF directory as shipped (rope_scaling.truncate false) follows transformers\' YaRN', async () => {
    const hf = join(dir, 'hf-shipped');
    writeGptOssHfDir(hf, config, weights, { tokenizerMetadata: plain(tokenizerMetadata), truncate: false });
    const model = await load(hf);
    expect((model.config as GptOssArchConfig).ropeScaling).toMatchObject({ truncate: false });
    const want = referenceGptOss(model.config as GptOssArchConfig, weights, PROMPT);
    expect(relativeError(await runModel(model, 5), want)).toBeLessThan(1e-5);
    // llama.cpp (and so a GGUF) truncates YaRN's ramp: at these positions the two differ measurably.
    expect(relativeError(want, referenceGptOss(config, weights, PROMPT))).toBeGreaterThan(1e-5);
  });
});

/** MXFP4 experts are held as Q8_0 (34 bytes per 32 weights), not widened to float32. */
function expectQ8Experts(model: LoadedModel): void {
  for (const part of ['gate', 'up', 'down']) {
    const tensor = model.weights!.get(`model.layers.1.mlp.experts.${part}_proj.weight`);
    const elements = tensor.shape.reduce((a, b) => a * b, 1);
    expect(tensor.kind === 'quantized' && { format: tensor.format, bytes: tensor.data.byteLength }).toEqual({ format: 'q8_0', bytes: (elements / 32) * 34 });
  }
}

/** GGUF typed metadata as plain values (what ggufVocabToTokenizerJson reads). */
function plain(typed: Record<string, { value: unknown }>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(typed).map(([k, v]) => [k, v.value]));
}
