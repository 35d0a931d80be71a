/** @jest-environment ./test/helpers/ort-environment.js */
// The same seeded Qwen2.5-VL as llama.cpp's converter writes it (a qwen2vl text GGUF and an
// mmproj GGUF beside it) against its Hugging Face directory: the mmproj's split tensors join back
// into the same tower (equal image rows), the text GGUF reads its M-RoPE sections and gives the
// directory's logits under M-RoPE positions.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../../src/model/load-model';
import type { DecoderArchConfig, LoadedModel } from '../../../../src/model/types';
import { mropePositions } from '../../../../src/model/vision/mrope-positions';
import { preprocessImage } from '../../../../src/model/vision/preprocess-image';
import { readGgufFile, type GgufFile } from '../../../../src/model/gguf/gguf-file';
import { writeModelGguf } from '../../../../src/model/gguf/write-model';
import { readJsonFile } from '../../../../src/model/hf/hf-tokenizer-files';
import { qwenVlVision } from '../../../../src/model/vision/qwen-vl-entry';
import type { VisionModel } from '../../../../src/model/vision/vision-model';
import { loadOptions } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { IMAGE_PAD_ID, writeQwenVlGguf, writeQwenVlHfDir } from '../../../helpers/qwen-vl-files';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON, withRunner } from '../../../helpers/runner-driver';
import { STORIES } from '../../../helpers/write-decoder-files';
import { randomImage } from './random-image';

const SEED = 23;
let dir: string;
let hfText: LoadedModel;
let ggufText: LoadedModel;
let hfVision: VisionModel;
let ggufVision: VisionModel;
let mmproj: GgufFile;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ortllm-qwenvl-gguf-'));
  await writeQwenVlHfDir(join(dir, 'hf'), SEED, { layout: 'nested' });
  const paths = await writeQwenVlGguf(join(dir, 'gguf'), SEED);
  hfText = await loadModel(loadOptions(join(dir, 'hf')));
  ggufText = await loadModel(loadOptions(paths.text));
  const section = (ggufText.config as DecoderArchConfig).mropeSection;
  // Through the registry entry, as the model loader calls it: the HF directory's section comes from its config.json.
  const configJson = readJsonFile(join(dir, 'hf', 'config.json'))!;
  hfVision = qwenVlVision.fromHf({ dir: join(dir, 'hf'), configJson, tokenizer: hfText.tokenizer, textHiddenSize: hfText.config.hiddenSize, loadWeights: true, mmProcessorKwargs: {} });
  mmproj = await readGgufFile(paths.mmproj);
  ggufVision = qwenVlVision.fromGguf({ mmproj, tokenizer: ggufText.tokenizer, textHiddenSize: ggufText.config.hiddenSize, loadWeights: true, mmProcessorKwargs: {}, mropeSection: section });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

needs(STORIES, NATIVE_ADDON).describe('Qwen2.5-VL from GGUF (text + mmproj) and from Hugging Face', () => {
  it('reads the text GGUF as qwen2 with M-RoPE sections and the mmproj as the same tower', () => {
    expect(ggufText.config.architecture).toBe('qwen2');
    expect((ggufText.config as DecoderArchConfig).mropeSection).toEqual([2, 3, 3]);
    expect(ggufVision.prompt.imageTokenId).toBe(IMAGE_PAD_ID);
    expect(ggufVision.processor).toMatchObject({ family: 'qwen2_vl', geometry: 'llama.cpp', patchSize: 14, mergeSize: 2 });
    expect(ggufVision.mrope).toEqual(hfVision.mrope);
  });

  it('refuses an mmproj without the text model\'s M-RoPE section, and mm_processor_kwargs beyond the pixel limits', () => {
    const ctx = { mmproj, tokenizer: ggufText.tokenizer, textHiddenSize: ggufText.config.hiddenSize, loadWeights: false, mmProcessorKwargs: {} };
    expect(() => qwenVlVision.fromGguf(ctx)).toThrow(/M-RoPE section/);
    const vision = qwenVlVision.fromGguf({ ...ctx, mropeSection: [2, 3, 3] });
    expect(vision.processorWith({ max_pixels: 12544 })).toMatchObject({ maxPixels: 12544 });
    expect(() => vision.processorWith({ fps: 2 })).toThrow(/fps not supported/);
  });

  it('refuses to write the M-RoPE language model as a plain qwen2 GGUF (no key would hold its sections)', () => {
    expect(() => writeModelGguf(join(dir, 'plain.gguf'), hfText.config as DecoderArchConfig, [], {}, 'f32')).toThrow(/qwen2vl architecture/);
  });

  it('gives the same image rows from both formats', async () => {
    // A size both geometries keep as it is (multiples of 28, within both pixel ranges).
    const image = preprocessImage(hfVision.processor, randomImage(168, 112, 5));
    expect(preprocessImage(ggufVision.processor, randomImage(168, 112, 5)).pixelValues).toEqual(image.pixelValues);
    const [hf, gguf] = await Promise.all([hfVision, ggufVision].map((v) => v.createEncoder({ intraOpThreads: 1 })));
    try {
      const a = hf.encode(image);
      const b = gguf.encode(image);
      expect(maxAbsDiff(a, b) / Math.max(...a.map(Math.abs))).toBeLessThan(1e-6);
    } finally {
      await Promise.all([hf.release(), gguf.release()]);
    }
  });

  it('gives the same logits from both text models under M-RoPE positions', async () => {
    const prompt = [1, 77, ...Array<number>(6).fill(IMAGE_PAD_ID), 12, 45];
    const { positions } = mropePositions(prompt, [{ offset: 2, gridThw: [1, 4, 6] }], ggufVision.mrope!);
    const logits = (model: LoadedModel) =>
      withRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1 }, async (runner) => {
        const table = new BlockAllocator(runner).table(prompt.length);
        return (await runner.step([{ tokens: prompt, positionOffset: 0, blockTable: table, allLogits: true, ropePositions: positions }])).allLogits[0]!.slice();
      });
    const a = await logits(hfText);
    const b = await logits(ggufText);
    expect(maxAbsDiff(a, b) / Math.max(...a.map(Math.abs))).toBeLessThan(1e-5);
  });
});
