/** @jest-environment ./test/helpers/ort-environment.js */
// The Gemma 3 (SigLIP) and LLaVA-1.5 (CLIP) towers and projectors, loaded from Hugging Face
// directories (both transformers layouts) and from GGUF text models with an mmproj beside them,
// against a float64 forward written from the models' definitions (test/helpers/reference-vision.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../../src/model/load-model';
import type { LoadedModel } from '../../../../src/model/types';
import { preprocessImage } from '../../../../src/model/vision/preprocess-image';
import { gemma3HfVitConfig } from '../../../../src/model/vision/towers/gemma3-tower';
import { llavaHfVitConfig } from '../../../../src/model/vision/towers/llava-tower';
import { sequenceLength } from '../../../../src/model/vision/towers/vit-config';
import { createVitEncoder } from '../../../../src/model/vision/towers/vit-encoder';
import type { PreprocessedImage } from '../../../../src/model/vision/preprocessed-image';
import { loadOptions } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { referenceVisionForward, relativeDiff } from '../../../helpers/reference-vision';
import { STORIES, writeVisionGguf, writeVisionHfDir, type VisionFamilyName, type WrittenVisionModel } from '../../../helpers/write-vision-models';
import { randomImage } from './random-image';

let tmp: string;
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-towers-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function encode(model: LoadedModel, image: PreprocessedImage): Promise<Float32Array> {
  const encoder = await model.vision!.createEncoder({ intraOpThreads: 1 });
  try {
    expect(encoder.hiddenSize).toBe(model.config.hiddenSize);
    return encoder.encode(image);
  } finally {
    await encoder.release();
  }
}

const FAMILIES: Array<[VisionFamilyName, number]> = [
  ['gemma3', 16],
  ['llava', 16],
];

needs(STORIES).describe('vision towers', () => {
  describe.each(FAMILIES)('%s', (family, tokens) => {
    let written: WrittenVisionModel;
    let hfDir: string;
    let ggufPath: string;
    let hf: LoadedModel;
    let image: PreprocessedImage;
    let reference: Float64Array[];

    beforeAll(async () => {
      hfDir = join(tmp, `${family}-hf`);
      written = await writeVisionHfDir(family, hfDir);
      ggufPath = await writeVisionGguf(family, hfDir, join(tmp, `${family}-gguf`), written);
      hf = await loadModel(loadOptions(hfDir));
      const side = (written.json.vision_config as Record<string, number>).image_size;
      // At the tower's native size both geometries skip the resize: the same pixels for HF and GGUF.
      image = preprocessImage(hf.vision!.processor, randomImage(side, side, 3));
      reference = referenceVisionForward(family, written.json, written.vision, image.pixelValues);
    });

    it('loads the vision side of the HF directory with its processor and prompt format', () => {
      const vision = hf.vision!;
      expect(vision.family).toBe(family);
      expect(vision.source).toBe(hfDir);
      expect(vision.processor.family).toBe(family);
      expect(image.placeholderTokens).toBe(tokens);
      const newlines = hf.tokenizer!.encode('\n\n', { addSpecialTokens: false });
      if (family === 'gemma3') {
        expect(vision.prompt).toEqual({ placeholderText: '<start_of_image>', placeholderTokenId: 512, imageTokenId: 513, prefix: [...newlines, 512], suffix: [514, ...newlines] });
      } else {
        expect(vision.prompt).toEqual({ placeholderText: '<image>', placeholderTokenId: 512, imageTokenId: 512, prefix: [], suffix: [] });
      }
      expect(vision.weights).not.toBeNull();
    });

    it('encodes an image as the float64 reference does (HF weights)', async () => {
      expect(reference.length).toBe(tokens);
      expect(relativeDiff(await encode(hf, image), reference)).toBeLessThan(1e-4);
    });

    it('attends in groups of heads when the scores would pass the budget, to the same rows', async () => {
      const textHidden = hf.config.hiddenSize;
      const tower = family === 'gemma3' ? gemma3HfVitConfig(written.json, textHidden, hfDir) : llavaHfVitConfig(written.json, textHidden, hfDir);
      // One head's scores fit, two do not: every head in its own node.
      const oneHead = sequenceLength(tower) ** 2 * 4;
      const encoder = createVitEncoder(tower, hf.vision!.weights!, { intraOpThreads: 1, scoresBudgetBytes: oneHead });
      try {
        expect(relativeDiff(encoder.encode(image), reference)).toBeLessThan(1e-4);
      } finally {
        await encoder.release();
      }
    });

    it('gives the same rows from the newer transformers layout', async () => {
      const dir = join(tmp, `${family}-hf-newer`);
      await writeVisionHfDir(family, dir, { layout: 'newer' });
      const newer = await loadModel(loadOptions(dir));
      expect(newer.config).toEqual(hf.config);
      expect(await encode(newer, image)).toEqual(await encode(hf, image));
    });

    it('gives the same rows from the GGUF text model and its mmproj', async () => {
      const gguf = await loadModel(loadOptions(ggufPath));
      expect(gguf.vision!.source).toBe(join(tmp, `${family}-gguf`, 'mmproj-model.gguf'));
      expect(gguf.vision!.prompt).toEqual(hf.vision!.prompt);
      expect(gguf.vision!.processor.geometry).toBe('llama.cpp');
      const rows = await encode(gguf, image);
      expect(relativeDiff(rows, reference)).toBeLessThan(1e-4);
      const hfRows = await encode(hf, image);
      expect(relativeDiff(rows, [...Array(tokens).keys()].map((i) => hfRows.subarray(i * hf.config.hiddenSize, (i + 1) * hf.config.hiddenSize)))).toBeLessThan(1e-6);
    });

    it('loads without weights on the HTTP side, and builds no encoder then', async () => {
      const light = await loadModel(loadOptions(hfDir, { loadWeights: false }));
      expect(light.vision!.weights).toBeNull();
      expect(light.vision!.prompt).toEqual(hf.vision!.prompt);
      await expect(light.vision!.createEncoder({})).rejects.toThrow('loaded without weights');
    });
  });
});
