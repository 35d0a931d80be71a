/** @jest-environment ./test/helpers/ort-environment.js */
// M-RoPE in the segmented runner: a qwen2 decoder whose rotary half-dims split into (t, h, w)
// sections. Equal positions on every axis give exactly the 1-D result; an image's positions
// (mropePositions) match the float64 reference rotating each frequency by its section's axis.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { loadModel } from '../../../src/model/load-model';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { SegmentedRunner, SegmentedRunnerOptions } from '../../../src/model/runner/segmented-runner';
import type { DecoderArchConfig, LoadedModel, ModelRunner, StepSequence } from '../../../src/model/types';
import { mropePositions } from '../../../src/model/vision/mrope-positions';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceForward } from '../../helpers/reference-forward';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON, withRunner } from '../../helpers/runner-driver';
import { hfConfigJson, STORIES, writeDecoderHfDir } from '../../helpers/write-decoder-files';

const SHAPE = { hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 512, rmsNormEps: 1e-6, tieWordEmbeddings: false, maxPositionEmbeddings: 512 };
const SECTION = [2, 3, 3] as const; // head_dim 16: 8 rotary half-dims
const IMAGE = 300;
// text, an image of 4 x 6 patches (2 x 3 merged tokens), text, an image of 6 x 4 patches (3 x 2), text
const PROMPT = [1, 77, ...Array<number>(6).fill(IMAGE), 12, 45, 9, ...Array<number>(6).fill(IMAGE), 33, 18];
const IMAGES = [
  { offset: 2, gridThw: [1, 4, 6] as const },
  { offset: 11, gridThw: [1, 6, 4] as const },
];
const RUNNER = { blockSize: 4, numBlocks: 32, device: 'cpu' as const, intraOpThreads: 1, nativeQ8Gemm: false, smallDecoder: false };

let dir: string;
let model: LoadedModel;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ortllm-mrope-'));
  const config = llamaConfig({ ...SHAPE, architecture: 'qwen2', attentionBias: true });
  await writeDecoderHfDir(dir, config, hfConfigJson(config, { rope_scaling: { type: 'mrope', mrope_section: [...SECTION] } }), 7);
  model = await loadModel(loadOptions(dir));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every position's logits, the prompt fed in chunks of `chunk` with each chunk's slice of `ropePositions`. */
async function logitsOf(runner: ModelRunner, tokens: readonly number[], chunk: number, ropePositions?: Int32Array): Promise<Float32Array[]> {
  const table = new BlockAllocator(runner).table(tokens.length);
  const vocab = runner.config.vocabSize;
  const out: Float32Array[] = [];
  for (let at = 0; at < tokens.length; at += chunk) {
    const piece = tokens.slice(at, at + chunk);
    const seq: StepSequence = { tokens: piece, positionOffset: at, blockTable: table, allLogits: true };
    if (ropePositions) seq.ropePositions = Int32Array.from([0, 1, 2].flatMap((axis) => Array.from(ropePositions.subarray(axis * tokens.length + at, axis * tokens.length + at + piece.length))));
    const all = (await runner.step([seq])).allLogits[0]!;
    for (let i = 0; i < piece.length; i++) out.push(all.slice(i * vocab, (i + 1) * vocab));
  }
  return out;
}

function worstRelative(got: Float32Array[], want: Float32Array[]): number {
  return Math.max(...got.map((row, t) => maxAbsDiff(row, want[t]) / Math.max(...want[t].map(Math.abs))));
}

needs(STORIES, NATIVE_ADDON).describe('M-RoPE in the segmented runner', () => {
  it("reads mrope_section from config.json's rope_scaling", () => {
    expect((model.config as DecoderArchConfig).mropeSection).toEqual(SECTION);
    expect((model.config as DecoderArchConfig).ropeScaling).toBeNull();
  });

  it('gives exactly the 1-D result when every axis has the 1-D position', async () => {
    const text = mropePositions(PROMPT, [], { section: SECTION, spatialMergeSize: 2 });
    await withRunner(model, RUNNER, async (runner) => {
      const plain = await logitsOf(runner, PROMPT, 5);
      const equal = await logitsOf(runner, PROMPT, 5, text.positions);
      expect(equal.map((row, t) => maxAbsDiff(row, plain[t]))).toEqual(PROMPT.map(() => 0));
    });
  });

  it("matches the float64 reference with two images' positions, prefilled in chunks", async () => {
    const { positions } = mropePositions(PROMPT, IMAGES, { section: SECTION, spatialMergeSize: 2 });
    const want = referenceForward(model.config, model.weights!, PROMPT, undefined, undefined, positions);
    const plain = referenceForward(model.config, model.weights!, PROMPT);
    await withRunner(model, RUNNER, async (runner) => {
      const got = await logitsOf(runner, PROMPT, 4, positions);
      expect(worstRelative(got, want)).toBeLessThan(1e-4);
      // The positions matter: past the first image the 1-D logits differ.
      expect(worstRelative(got.slice(3), plain.slice(3))).toBeGreaterThan(1e-2);
    });
  });

  it('splits a step over passes with each piece keeping its own positions', async () => {
    const { positions } = mropePositions(PROMPT, IMAGES, { section: SECTION, spatialMergeSize: 2 });
    const want = referenceForward(model.config, model.weights!, PROMPT, undefined, undefined, positions);
    await withRunner(model, { ...RUNNER, maxPassRows: 6 } as SegmentedRunnerOptions, async (runner) => {
      expect(worstRelative(await logitsOf(runner, PROMPT, PROMPT.length, positions), want)).toBeLessThan(1e-4);
    });
  });

  const q8Cpu = nativeKernels()?.q8Available ? it : it.skip;
  q8Cpu("native-q8 rotates by the same rows as onnx-segments", async () => {
    // llama layout (no QKV biases) so native-q8 takes it; Q8_0 weights for both backends.
    const config = llamaConfig({ ...SHAPE, headDim: 16, mropeSection: SECTION });
    const q8 = quantizedQ8(randomModel(config, 5));
    const { positions } = mropePositions(PROMPT, IMAGES, { section: SECTION, spatialMergeSize: 2 });
    const run = (nativeQ8Gemm: boolean) =>
      withRunner(q8, { ...RUNNER, nativeQ8Gemm }, async (runner) => {
        expect((runner as SegmentedRunner).backendName).toBe(nativeQ8Gemm ? 'native-q8' : 'onnx-segments');
        return logitsOf(runner, PROMPT, 5, positions);
      });
    const native = await run(true);
    const onnx = await run(false);
    expect(worstRelative(native, onnx)).toBeLessThan(1e-5);
    const plain = await withRunner(q8, { ...RUNNER, nativeQ8Gemm: true }, (runner) => logitsOf(runner, PROMPT, 5));
    expect(worstRelative(plain.slice(3), native.slice(3))).toBeGreaterThan(1e-2);
  });

  it('refuses M-RoPE positions in the runner that computes 1-D positions in its graph', async () => {
    const { positions } = mropePositions(PROMPT, IMAGES, { section: SECTION, spatialMergeSize: 2 });
    await withRunner(model, { ...RUNNER, attention: 'graph' }, async (runner) => {
      await expect(logitsOf(runner, PROMPT, PROMPT.length, positions)).rejects.toThrow(/M-RoPE positions/);
    });
  });
});
