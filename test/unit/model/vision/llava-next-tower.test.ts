/** @jest-environment ./test/helpers/ort-environment.js */
// LLaVA-NeXT from a Hugging Face directory (both transformers layouts) and from a GGUF text model
// with LLaVA-1.6's mmproj beside it: the loader's vision side,
// the encoder's rows for non-square images against transformers' pack_image_features in float64
// (test/helpers/reference-vision.ts), and the token count the serving side asks for equal to the
// rows the encoder returns, over several sizes.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../../src/model/load-model';
import type { LoadedModel } from '../../../../src/model/types';
import { imagePlaceholderTokens, preprocessImage } from '../../../../src/model/vision/preprocess-image';
import type { ImageEncoder } from '../../../../src/model/vision/vision-model';
import { loadOptions } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { referenceLlavaNextForward, relativeDiff } from '../../../helpers/reference-vision';
import { gv } from '../../../../src/model/gguf/writer';
import { STORIES, writeVisionGguf, writeVisionHfDir, type WrittenVisionModel } from '../../../helpers/write-vision-models';
import { randomImage } from './random-image';

needs(STORIES).describe('LLaVA-NeXT', () => {
  let tmp: string;
  let written: WrittenVisionModel;
  let hfDir: string;
  let hf: LoadedModel;
  let encoder: ImageEncoder;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-llava-next-'));
    hfDir = join(tmp, 'hf');
    written = await writeVisionHfDir('llava_next', hfDir);
    hf = await loadModel(loadOptions(hfDir));
    encoder = await hf.vision!.createEncoder({ intraOpThreads: 1 });
  });
  afterAll(async () => {
    await encoder?.release();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('loads the vision side with its anyres processor, the <image> prompt and image_newline', () => {
    const vision = hf.vision!;
    expect(vision.family).toBe('llava_next');
    expect(vision.processor).toMatchObject({ family: 'llava_next', cropSize: { width: 56, height: 56 }, patchSize: 14, gridPinpoints: written.json.image_grid_pinpoints });
    expect(vision.prompt).toEqual({ placeholderText: '<image>', placeholderTokenId: 512, imageTokenId: 512, prefix: [], suffix: [] });
    expect(vision.weights!.has('image_newline')).toBe(true);
    expect(hf.config.hiddenSize).toBe(64);
    expect(encoder.hiddenSize).toBe(64);
  });

  it.each([
    [150, 70],
    [60, 130],
  ])('encodes a %ix%i image as the float64 reference does', (width, height) => {
    const image = preprocessImage(hf.vision!.processor, randomImage(width, height, width + height));
    const reference = referenceLlavaNextForward(written.json, written.vision, image.pixelValues, { width, height });
    expect(reference.length).toBe(imagePlaceholderTokens(hf.vision!.processor, width, height));
    expect(relativeDiff(encoder.encode(image), reference)).toBeLessThan(1e-4);
  });

  it('returns exactly the placeholder count of rows for every size', () => {
    const counts: number[] = [];
    for (const [width, height] of [[20, 20], [56, 56], [57, 200], [200, 57], [111, 112], [300, 90], [90, 300], [1, 40]]) {
      const image = preprocessImage(hf.vision!.processor, randomImage(width, height, 7));
      const tokens = imagePlaceholderTokens(hf.vision!.processor, width, height);
      expect(image.placeholderTokens).toBe(tokens);
      expect(encoder.encode(image).length).toBe(tokens * 64);
      counts.push(tokens);
    }
    // Different aspect ratios keep different parts of the grid.
    expect(new Set(counts).size).toBeGreaterThan(3);
  });

  it('gives the same rows from the newer transformers layout', async () => {
    const dir = join(tmp, 'hf-newer');
    await writeVisionHfDir('llava_next', dir, { layout: 'newer' });
    const newer = await loadModel(loadOptions(dir));
    expect(newer.config).toEqual(hf.config);
    const image = preprocessImage(hf.vision!.processor, randomImage(90, 40, 1));
    const other = await newer.vision!.createEncoder({ intraOpThreads: 1 });
    try {
      expect(other.encode(image)).toEqual(encoder.encode(image));
    } finally {
      await other.release();
    }
  });

  it('gives the same rows from the GGUF text model and its LLaVA-1.6 mmproj', async () => {
    const path = await writeVisionGguf('llava_next', hfDir, join(tmp, 'gguf'), written);
    const gguf = await loadModel(loadOptions(path));
    expect(gguf.vision!.family).toBe('llava_next');
    expect(gguf.vision!.prompt).toEqual(hf.vision!.prompt);
    // The mmproj stores CLIP's mean and std as float32, which normalisation casts them to anyway.
    expect({ ...gguf.vision!.processor, normalization: null }).toEqual({ ...hf.vision!.processor, normalization: null });
    const image = preprocessImage(gguf.vision!.processor, randomImage(150, 70, 4));
    const other = await gguf.vision!.createEncoder({ intraOpThreads: 1 });
    try {
      const rows = other.encode(image);
      expect(relativeDiff(rows, referenceLlavaNextForward(written.json, written.vision, image.pixelValues, { width: 150, height: 70 }))).toBeLessThan(1e-4);
      expect(rows).toEqual(encoder.encode(image));
    } finally {
      await other.release();
    }
  });

  it("refuses an mmproj whose tiles are not unpadded ('flat') or that lacks image_newline", async () => {
    const flat = await writeVisionGguf('llava_next', hfDir, join(tmp, 'gguf-flat'), written, { metadata: { 'clip.vision.mm_patch_merge_type': gv.str('flat') } });
    await expect(loadModel(loadOptions(flat))).rejects.toThrow("clip.vision.mm_patch_merge_type 'flat' is not supported");
    const bare = await writeVisionGguf('llava_next', hfDir, join(tmp, 'gguf-bare'), written, { drop: ['model.image_newline'] });
    await expect(loadModel(loadOptions(bare))).rejects.toThrow('model.image_newline is missing');
  });

  it("refuses a checkpoint whose processor's pinpoints differ from config.json's, or whose processor is LLaVA-1.5's", async () => {
    const dir = join(tmp, 'hf-mismatch');
    await writeVisionHfDir('llava_next', dir, { configOverrides: { image_grid_pinpoints: [[56, 112], [112, 56]] } });
    const pre = JSON.parse(readFileSync(join(dir, 'preprocessor_config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'preprocessor_config.json'), JSON.stringify({ ...pre, image_grid_pinpoints: [[112, 112]] }));
    await expect(loadModel(loadOptions(dir))).rejects.toThrow("image_grid_pinpoints [[112,112]] differs from config.json's [[56,112],[112,56]]");
    const clip = join(tmp, 'hf-clip-processor');
    await writeVisionHfDir('llava', clip, { configOverrides: { model_type: 'llava_next' } });
    await expect(loadModel(loadOptions(clip))).rejects.toThrow('a llava image processor does not fit a llava_next model');
  });
});
