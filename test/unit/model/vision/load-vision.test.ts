/** @jest-environment ./test/helpers/ort-environment.js */
// The loader's side of the vision towers: LLaVA's llama text decoder through the architecture
// registry, feature-layer depths and select strategies in both formats (including llama.cpp's
// older mmproj files), the processor kwargs, and refusals of malformed configs and mmproj files,
// each by the name of what is wrong.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toLoadModelOptions } from '../../../../src/config/engine-args';
import { resolveServerConfig } from '../../../../src/config/server-config';
import { loadModel } from '../../../../src/model/load-model';
import { f16ToF32, f32ToF16 } from '../../../../src/model/gguf/half';
import { gv } from '../../../../src/model/gguf/writer';
import type { LoadedModel } from '../../../../src/model/types';
import { preprocessImage } from '../../../../src/model/vision/preprocess-image';
import { loadOptions } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { referenceVisionForward } from '../../../helpers/reference-vision';
import { STORIES, writeVisionGguf, writeVisionHfDir, type MmprojOptions, type VisionFamilyName, type WriteVisionOptions } from '../../../helpers/write-vision-models';
import { randomImage } from './random-image';

let tmp: string;
let count = 0;
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-load-vision-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function hfModel(family: VisionFamilyName, opts: WriteVisionOptions = {}) {
  const dir = join(tmp, `hf-${count++}`);
  const written = await writeVisionHfDir(family, dir, opts);
  return { dir, written };
}

async function ggufModel(family: VisionFamilyName, opts: WriteVisionOptions = {}, mmproj: MmprojOptions = {}) {
  const { dir, written } = await hfModel(family, opts);
  const path = await writeVisionGguf(family, dir, join(tmp, `gguf-${count++}`), written, mmproj);
  return { path, written };
}

/** The encoder's rows for a random image at the tower's native size, and the float64 reference's. */
async function rowsAndReference(model: LoadedModel, json: Record<string, unknown>, reference: Parameters<typeof referenceVisionForward>[2], family: VisionFamilyName) {
  const side = (json.vision_config as Record<string, number>).image_size;
  const image = preprocessImage(model.vision!.processor, randomImage(side, side, 9));
  const encoder = await model.vision!.createEncoder({ intraOpThreads: 1 });
  try {
    return { rows: encoder.encode(image), want: referenceVisionForward(family, json, reference, image.pixelValues) };
  } finally {
    await encoder.release();
  }
}

function maxRelativeDiff(rows: Float32Array, want: Float64Array[]): number {
  const flat = want.flatMap((row) => Array.from(row));
  expect(rows.length).toBe(flat.length);
  const scale = Math.max(...flat.map(Math.abs));
  return Math.max(...flat.map((v, i) => Math.abs(rows[i] - v))) / scale;
}

needs(STORIES).describe('loading vision models', () => {
  describe("LLaVA's text decoder", () => {
    it.each(['older', 'newer'] as const)('loads as llama from the %s transformers layout, untied, with the checkpoint values', async (layout) => {
      const { dir, written } = await hfModel('llava', { layout });
      const model = await loadModel(loadOptions(dir));
      expect(model.config).toMatchObject({ architecture: 'llama', hiddenSize: 64, numLayers: 2, vocabSize: 513, tieWordEmbeddings: false, rmsNormEps: 1e-5 });
      for (const name of ['lm_head.weight', 'model.embed_tokens.weight', 'model.layers.1.self_attn.k_proj.weight', 'model.norm.weight']) {
        const tensor = model.weights!.get(name);
        expect(tensor.kind === 'f32' && tensor.data).toEqual(written.text.get(name)!.data);
      }
      expect(model.weights!.names().filter((n) => n.includes('vision') || n.includes('projector'))).toEqual([]);
    });
  });

  describe('feature layers and select strategies', () => {
    const full = { vision_feature_layer: -1, vision_feature_select_strategy: 'full' };

    it("runs every CLIP layer and keeps the class token ('full', feature layer -1), in both formats", async () => {
      const { dir, written } = await hfModel('llava', { configOverrides: full });
      const hf = await loadModel(loadOptions(dir));
      const { rows, want } = await rowsAndReference(hf, written.json, written.vision, 'llava');
      expect(want.length).toBe(17);
      expect(maxRelativeDiff(rows, want)).toBeLessThan(1e-4);
      // llama.cpp's files always drop the class token: the mmproj gives the 16 patch rows.
      const gguf = await ggufModel('llava', { configOverrides: full });
      const fromGguf = await loadModel(loadOptions(gguf.path));
      const patches = await rowsAndReference(fromGguf, { ...gguf.written.json, vision_feature_select_strategy: 'default' }, gguf.written.vision, 'llava');
      expect(patches.want.length).toBe(16);
      expect(maxRelativeDiff(patches.rows, patches.want)).toBeLessThan(1e-4);
    });

    it('takes the select strategy from config.json where processor_config.json leaves it out, as vLLM does', async () => {
      const { dir } = await hfModel('llava', { configOverrides: full, processorOverrides: { vision_feature_select_strategy: undefined } });
      const model = await loadModel(loadOptions(dir));
      expect(model.vision!.processor).toMatchObject({ family: 'llava', featureSelect: 'full' });
    });

    it("reads llama.cpp's older LLaVA mmproj files: no feature_layer (block_count - 1 layers), fc1 stored as ffn_down", async () => {
      const { path, written } = await ggufModel('llava', {}, { legacy: true });
      const model = await loadModel(loadOptions(path));
      const { rows, want } = await rowsAndReference(model, written.json, written.vision, 'llava');
      expect(maxRelativeDiff(rows, want)).toBeLessThan(1e-4);
    });
  });

  describe('mmproj storage', () => {
    it.each<VisionFamilyName>(['gemma3', 'llava'])('%s: F16 matrices give the reference of the F16-rounded weights', async (family) => {
      const { path, written } = await ggufModel(family, {}, { matrixType: 'f16' });
      const rounded = new Map([...written.vision].map(([name, t]) => [name, t.shape.length > 1 && !name.endsWith('position_embedding.weight') ? { shape: t.shape, data: t.data.map((v) => f16ToF32(f32ToF16(v))) } : t]));
      const model = await loadModel(loadOptions(path));
      const { rows, want } = await rowsAndReference(model, written.json, rounded, family);
      expect(maxRelativeDiff(rows, want)).toBeLessThan(1e-4);
      // The rounding is visible: the unrounded weights' reference is further away.
      expect(maxRelativeDiff(rows, (await rowsAndReference(model, written.json, written.vision, family)).want)).toBeGreaterThan(1e-4);
    });
  });

  describe('processor kwargs', () => {
    it('--mm-processor-kwargs reaches the loader', () => {
      const kwargs = { do_pan_and_scan: false };
      expect(toLoadModelOptions(resolveServerConfig({ mmProcessorKwargs: kwargs }, {})).mmProcessorKwargs).toEqual(kwargs);
    });

    it('applies --mm-processor-kwargs at load and a request\'s kwargs per call, refusing unknown keys by name', async () => {
      const { dir } = await hfModel('gemma3');
      await expect(loadModel(loadOptions(dir, { mmProcessorKwargs: { do_pan_and_scan: true } }))).rejects.toThrow('do_pan_and_scan true is not supported');
      const model = await loadModel(loadOptions(dir, { mmProcessorKwargs: { do_pan_and_scan: false } }));
      expect(model.vision!.processorWith({}).family).toBe('gemma3');
      expect(() => model.vision!.processorWith({ crop_size: 3 })).toThrow('mm_processor_kwargs: unsupported setting crop_size=3');
      const gguf = await ggufModel('llava');
      const fromGguf = await loadModel(loadOptions(gguf.path));
      expect(() => fromGguf.vision!.processorWith({ max_pixels: 1000 })).toThrow('min_pixels / max_pixels apply to Qwen-VL only');
      expect(() => fromGguf.vision!.processorWith({ size: 3 })).toThrow('unsupported setting size=3');
    });
  });

  describe('refusals', () => {
    it.each<[string, VisionFamilyName, WriteVisionOptions, string]>([
      ['stacked feature layers', 'llava', { configOverrides: { vision_feature_layer: [-2, -1] } }, 'vision_feature_layer [-2,-1] is not supported'],
      ['a feature layer past the tower', 'llava', { configOverrides: { vision_feature_layer: 5 } }, 'vision_feature_layer 5 is outside'],
      ['a projector activation other than gelu', 'llava', { configOverrides: { projector_hidden_act: 'relu' } }, "projector_hidden_act 'relu' is not supported"],
      ['a processor counting other tokens than the tower returns', 'llava', { processorOverrides: { vision_feature_select_strategy: 'full' } }, 'counts 17 tokens per image, the vision tower returns 16'],
      ['a token count that does not tile the patch grid', 'gemma3', { configOverrides: { mm_tokens_per_image: 9 } }, 'mm_tokens_per_image 9 is not a square whose side divides the 16 x 16 patch grid'],
      ['a config token id the tokenizer disagrees with', 'gemma3', { configOverrides: { image_token_index: 262144 } }, 'config.json says <image_soft_token> is token 262144, the tokenizer says 513'],
    ])('a config.json with %s', async (_what, family, opts, message) => {
      const { dir } = await hfModel(family, opts);
      await expect(loadModel(loadOptions(dir))).rejects.toThrow(message);
    });

    it('a tokenizer without the image tokens', async () => {
      const { dir } = await hfModel('llava');
      await expect(loadModel(loadOptions(dir, { tokenizer: STORIES }))).rejects.toThrow('the tokenizer has no <image> token');
    });

    it.each<[string, VisionFamilyName, MmprojOptions, string]>([
      ['an unknown projector type', 'llava', { metadata: { 'clip.projector_type': gv.str('ldp') } }, 'clip.projector_type "ldp" is not a supported vision projector'],
      ['no vision encoder', 'gemma3', { metadata: { 'clip.has_vision_encoder': gv.bool(false) } }, 'clip.has_vision_encoder is not true'],
      ['stacked feature layers', 'llava', { metadata: { 'clip.vision.feature_layer': gv.i32s([1, 2]) } }, 'clip.vision.feature_layer [1,2] is not supported'],
      ['a missing layer tensor', 'gemma3', { drop: ['v.blk.1.attn_q.weight'] }, 'missing weight vision_tower.vision_model.encoder.layers.1.self_attn.q_proj.weight'],
      ['a missing projector', 'llava', { drop: ['mm.2.weight'] }, 'mm.2.weight is missing'],
      ['SigLIP without GELU', 'gemma3', { metadata: { 'clip.use_gelu': gv.bool(false) } }, 'clip.use_gelu is not true'],
      ['a projection to another width than the text model', 'gemma3', { metadata: { 'clip.vision.projection_dim': gv.u32(32) } }, "makes rows of 32, the text model's hidden size is 64"],
    ])('an mmproj with %s', async (_what, family, mmproj, message) => {
      const { path } = await ggufModel(family, {}, mmproj);
      await expect(loadModel(loadOptions(path))).rejects.toThrow(message);
    });

    it('two mmproj files beside the model', async () => {
      const { path } = await ggufModel('gemma3');
      copyFileSync(join(path, '..', 'mmproj-model.gguf'), join(path, '..', 'mmproj-other.gguf'));
      await expect(loadModel(loadOptions(path))).rejects.toThrow('several mmproj files (mmproj-model.gguf, mmproj-other.gguf)');
    });
  });
});
