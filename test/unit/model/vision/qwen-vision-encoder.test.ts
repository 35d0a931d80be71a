/** @jest-environment ./test/helpers/ort-environment.js */
// Qwen2.5-VL's vision tower + merger (the ONNX graph behind ImageEncoder) against a float64
// forward written from transformers' definition, on a seeded tiny checkpoint written as Hugging
// Face ships it; images whose units span several windows, partial ones at the edges.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../../src/model/load-model';
import type { DecoderArchConfig, LoadedModel } from '../../../../src/model/types';
import type { QwenVisionConfig } from '../../../../src/model/vision/qwen-vision-config';
import { preprocessImage } from '../../../../src/model/vision/preprocess-image';
import { loadQwenVlFromHf } from '../../../../src/model/vision/qwen-vl-model';
import type { VisionModel } from '../../../../src/model/vision/vision-model';
import { loadOptions } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { IMAGE_PAD_ID, QWEN_VL_VISION, qwenVisionTensors, writeQwenVlHfDir } from '../../../helpers/qwen-vl-files';
import { referenceQwenVision } from '../../../helpers/reference-qwen-vision';
import { STORIES } from '../../../helpers/write-decoder-files';
import { randomImage } from './random-image';

const SEED = 11;
/** The tower's shape read by hand from the written vision_config (not by the loader's parser). */
const REFERENCE_CONFIG: QwenVisionConfig = {
  depth: QWEN_VL_VISION.depth,
  hiddenSize: QWEN_VL_VISION.hidden_size,
  numHeads: QWEN_VL_VISION.num_heads,
  intermediateSize: QWEN_VL_VISION.intermediate_size,
  outHiddenSize: QWEN_VL_VISION.out_hidden_size,
  patchSize: QWEN_VL_VISION.patch_size,
  temporalPatchSize: QWEN_VL_VISION.temporal_patch_size,
  spatialMergeSize: QWEN_VL_VISION.spatial_merge_size,
  windowSize: QWEN_VL_VISION.window_size,
  fullAttentionBlocks: QWEN_VL_VISION.fullatt_block_indexes,
  // transformers' Qwen2RMSNorm in the tower is built with eps=1e-6.
  normEps: 1e-6,
};

let dir: string;
let text: LoadedModel;
let vision: VisionModel;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ortllm-qwenvl-'));
  await writeQwenVlHfDir(dir, SEED);
  text = await loadModel(loadOptions(dir));
  vision = loadQwenVlFromHf(dir, { tokenizer: text.tokenizer!, mropeSection: (text.config as DecoderArchConfig).mropeSection, loadWeights: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The tower's tensors as the test drew them, not as any loader read them. */
function drawnTensors(): (name: string) => Float32Array {
  const byName = new Map(qwenVisionTensors(SEED + 1).map((t) => [t.name, t.data]));
  return (name) => byName.get(name) ?? (() => { throw new Error(`no tensor ${name}`); })();
}

function worstRelative(got: Float32Array, want: Float64Array[], width: number): number {
  let worst = 0;
  want.forEach((row, r) => {
    const scale = Math.max(...row.map(Math.abs));
    for (let i = 0; i < width; i++) worst = Math.max(worst, Math.abs(got[r * width + i] - row[i]) / scale);
  });
  return worst;
}

needs(STORIES).describe('Qwen2.5-VL vision tower', () => {
  it('loads the directory as a qwen2 decoder with M-RoPE and an image side', () => {
    expect(text.config.architecture).toBe('qwen2');
    expect((text.config as DecoderArchConfig).mropeSection).toEqual([2, 3, 3]);
    expect(vision.family).toBe('qwen2_vl');
    expect(vision.prompt).toEqual({ placeholderText: '<|vision_start|><|image_pad|><|vision_end|>', placeholderTokenId: IMAGE_PAD_ID, imageTokenId: IMAGE_PAD_ID, prefix: [], suffix: [] });
    expect(vision.mrope).toEqual({ section: [2, 3, 3], spatialMergeSize: 2 });
  });

  it.each([
    { name: 'wide, two windows side by side, the second partial', width: 168, height: 84 },
    { name: 'tall, 2 x 2 windows with partial edges', width: 140, height: 196 },
    { name: 'two whole windows (the unit grid divides into windows exactly)', width: 224, height: 112 },
    { name: 'one window, square', width: 56, height: 56 },
  ])('matches the float64 reference: $name', async ({ width, height }) => {
    const image = preprocessImage(vision.processor, randomImage(width, height, width * 31 + height));
    expect(image.gridThw).toEqual([1, height / 14, width / 14]);
    const encoder = await vision.createEncoder({ intraOpThreads: 1 });
    try {
      const rows = encoder.encode(image);
      expect(encoder.hiddenSize).toBe(64);
      expect(rows.length).toBe(image.placeholderTokens * 64);
      const want = referenceQwenVision(REFERENCE_CONFIG, drawnTensors(), image.pixelValues, image.gridThw!);
      expect(worstRelative(rows, want, 64)).toBeLessThan(1e-4);
    } finally {
      await encoder.release();
    }
  });

  it('refuses an image whose patch rows do not match its grid', async () => {
    const image = preprocessImage(vision.processor, randomImage(56, 56, 3));
    const encoder = await vision.createEncoder({ intraOpThreads: 1 });
    try {
      expect(() => encoder.encode({ ...image, gridThw: [1, 4, 6] })).toThrow(/needs pixel values/);
    } finally {
      await encoder.release();
    }
  });
});
