// Processor configs parsed from Hugging Face JSON files (with mm_processor_kwargs) and from a
// GGUF mmproj written here with the project's GGUF writer; unsupported settings are refused
// by name.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGgufFile } from '../../../../src/model/gguf/gguf-file';
import { gv, writeGguf, type GgufTypedValue } from '../../../../src/model/gguf/writer';
import { imageProcessorConfigFromGguf } from '../../../../src/model/vision/processor-config-gguf';
import { imageProcessorConfigFromHf } from '../../../../src/model/vision/processor-config-hf';
import { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD } from '../../../../src/model/vision/processor-config';

const GEMMA3_PREPROCESSOR = {
  do_convert_rgb: null, do_normalize: true, do_pan_and_scan: null, do_rescale: true, do_resize: true,
  image_mean: [0.5, 0.5, 0.5], image_processor_type: 'Gemma3ImageProcessor', image_seq_length: 256,
  image_std: [0.5, 0.5, 0.5], pan_and_scan_max_num_crops: null, pan_and_scan_min_crop_size: null,
  pan_and_scan_min_ratio_to_activate: null, processor_class: 'Gemma3Processor', resample: 2,
  rescale_factor: 0.00392156862745098, size: { height: 896, width: 896 },
};
const CLIP_PREPROCESSOR = {
  crop_size: { height: 336, width: 336 }, do_center_crop: true, do_convert_rgb: true, do_normalize: true,
  do_rescale: true, do_resize: true, image_mean: [...OPENAI_CLIP_MEAN], image_processor_type: 'CLIPImageProcessor',
  image_std: [...OPENAI_CLIP_STD], processor_class: 'LlavaProcessor', resample: 3,
  rescale_factor: 0.00392156862745098, size: { shortest_edge: 336 },
};
const LLAVA_PROCESSOR = { image_token: '<image>', num_additional_image_tokens: 1, patch_size: 14, processor_class: 'LlavaProcessor', vision_feature_select_strategy: 'default' };
const QWEN_PREPROCESSOR = {
  min_pixels: 3136, max_pixels: 12845056, patch_size: 14, temporal_patch_size: 2, merge_size: 2,
  image_mean: [...OPENAI_CLIP_MEAN], image_std: [...OPENAI_CLIP_STD], image_processor_type: 'Qwen2VLImageProcessor',
  processor_class: 'Qwen2_5_VLProcessor',
};

describe('imageProcessorConfigFromHf', () => {
  it("reads Gemma 3's file: 896 stretch, bilinear, 0.5 mean/std, 256 tokens", () => {
    expect(imageProcessorConfigFromHf({ preprocessor: GEMMA3_PREPROCESSOR, processor: { image_seq_length: 256 }, source: 'gemma' })).toEqual({
      family: 'gemma3', geometry: 'hf', size: { width: 896, height: 896 }, resample: 'bilinear', tokensPerImage: 256,
      normalization: { rescaleFactor: 0.00392156862745098, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] },
    });
  });

  it('refuses pan-and-scan, from the file or from mm_processor_kwargs', () => {
    expect(() => imageProcessorConfigFromHf({ preprocessor: { ...GEMMA3_PREPROCESSOR, do_pan_and_scan: true }, source: 'g' })).toThrow(/do_pan_and_scan true is not supported/);
    expect(() => imageProcessorConfigFromHf({ preprocessor: GEMMA3_PREPROCESSOR, mmProcessorKwargs: { do_pan_and_scan: true }, source: 'g' })).toThrow(/mm_processor_kwargs: do_pan_and_scan/);
  });

  it("reads LLaVA-1.5's CLIP file with the processor's patch size", () => {
    const config = imageProcessorConfigFromHf({ preprocessor: CLIP_PREPROCESSOR, processor: LLAVA_PROCESSOR, source: 'llava' });
    expect(config).toMatchObject({ family: 'llava', shortestEdge: 336, cropSize: { width: 336, height: 336 }, resample: 'bicubic', patchSize: 14, featureSelect: 'default' });
  });

  it("takes the patch size from config.json when the processor file lacks it, and needs one", () => {
    expect(imageProcessorConfigFromHf({ preprocessor: CLIP_PREPROCESSOR, visionPatchSize: 14, source: 'llava' })).toMatchObject({ patchSize: 14 });
    expect(() => imageProcessorConfigFromHf({ preprocessor: CLIP_PREPROCESSOR, source: 'llava' })).toThrow(/patch_size is required/);
  });

  it("refuses anyres pinpoints on a CLIP processor by name; LlavaNextImageProcessor reads them", () => {
    expect(() => imageProcessorConfigFromHf({ preprocessor: { ...CLIP_PREPROCESSOR, image_grid_pinpoints: [[336, 672]] }, processor: LLAVA_PROCESSOR, source: 'l' })).toThrow(/image_grid_pinpoints/);
    const next = { ...CLIP_PREPROCESSOR, image_processor_type: 'LlavaNextImageProcessor', image_grid_pinpoints: [[336, 672]] };
    expect(imageProcessorConfigFromHf({ preprocessor: next, processor: LLAVA_PROCESSOR, source: 'l' })).toMatchObject({ family: 'llava_next', gridPinpoints: [[336, 672]] });
  });

  it('reads Qwen2.5-VL\'s limits, from min/max_pixels or from size, and lets mm_processor_kwargs override them', () => {
    expect(imageProcessorConfigFromHf({ preprocessor: QWEN_PREPROCESSOR, source: 'q' })).toMatchObject({
      family: 'qwen2_vl', minPixels: 3136, maxPixels: 12845056, patchSize: 14, mergeSize: 2, temporalPatchSize: 2, resample: 'bicubic',
    });
    const { min_pixels: _min, max_pixels: _max, ...withoutLimits } = QWEN_PREPROCESSOR;
    expect(imageProcessorConfigFromHf({ preprocessor: { ...withoutLimits, size: { shortest_edge: 6272, longest_edge: 1003520 } }, source: 'q' })).toMatchObject({ minPixels: 6272, maxPixels: 1003520 });
    expect(imageProcessorConfigFromHf({ preprocessor: QWEN_PREPROCESSOR, mmProcessorKwargs: { min_pixels: 200704, max_pixels: 401408 }, source: 'q' })).toMatchObject({ minPixels: 200704, maxPixels: 401408 });
  });

  it('refuses unknown settings and kwargs by name, and limits that cross', () => {
    expect(() => imageProcessorConfigFromHf({ preprocessor: { ...QWEN_PREPROCESSOR, do_sharpen: true }, source: 'q' })).toThrow(/unsupported setting do_sharpen=true/);
    expect(() => imageProcessorConfigFromHf({ preprocessor: QWEN_PREPROCESSOR, mmProcessorKwargs: { fps: 2 }, source: 'q' })).toThrow(/mm_processor_kwargs: unsupported setting fps=2/);
    expect(() => imageProcessorConfigFromHf({ preprocessor: QWEN_PREPROCESSOR, mmProcessorKwargs: { min_pixels: 10 ** 8 }, source: 'q' })).toThrow(/larger than max_pixels/);
  });

  it('refuses filters other than bilinear and bicubic, naming them', () => {
    expect(() => imageProcessorConfigFromHf({ preprocessor: { ...QWEN_PREPROCESSOR, resample: 1 }, source: 'q' })).toThrow(/resample 1 \(LANCZOS\)/);
  });

  it('honours do_rescale and do_normalize turned off', () => {
    const config = imageProcessorConfigFromHf({ preprocessor: { ...QWEN_PREPROCESSOR, do_rescale: false, do_normalize: false }, source: 'q' });
    expect(config.normalization).toEqual({ rescaleFactor: 1, mean: [0, 0, 0], std: [1, 1, 1] });
  });

  it('refuses an image processor it does not know', () => {
    expect(() => imageProcessorConfigFromHf({ preprocessor: { image_processor_type: 'PixtralImageProcessor' }, source: 'p' })).toThrow(/'PixtralImageProcessor' is not a supported image processor/);
  });
});

describe('imageProcessorConfigFromGguf', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'mmproj-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function mmproj(name: string, metadata: Record<string, GgufTypedValue>) {
    const path = join(dir, `${name}.gguf`);
    writeGguf(path, { 'general.architecture': gv.str('clip'), 'clip.has_vision_encoder': gv.bool(true), ...metadata }, [
      { name: 'v.patch_embd.weight', shape: [2, 3], type: 'f32', data: new Float32Array(6) },
    ]);
    return (await readGgufFile(path)).metadata;
  }

  const clipStats = { 'clip.vision.image_mean': gv.f32s([...OPENAI_CLIP_MEAN]), 'clip.vision.image_std': gv.f32s([...OPENAI_CLIP_STD]) };

  it("reads a Qwen2.5-VL mmproj: llama.cpp's geometry and token limits", async () => {
    const metadata = await mmproj('qwen', { 'clip.projector_type': gv.str('qwen2.5vl_merger'), 'clip.vision.image_size': gv.u32(560), 'clip.vision.patch_size': gv.u32(14), ...clipStats });
    const config = imageProcessorConfigFromGguf(metadata, 'qwen');
    expect(config).toMatchObject({ family: 'qwen2_vl', geometry: 'llama.cpp', resample: 'bicubic', patchSize: 14, mergeSize: 2, minPixels: 8 * 784, maxPixels: 4096 * 784 });
    config.normalization.mean.forEach((v, i) => expect(v).toBeCloseTo(OPENAI_CLIP_MEAN[i], 7));
    expect(imageProcessorConfigFromGguf(metadata, 'qwen', { maxPixels: 401408 })).toMatchObject({ maxPixels: 401408 });
  });

  it('reads a Gemma 3 mmproj: 896 letterboxed, bilinear, 256 tokens from the pool factor', async () => {
    const half = gv.f32s([0.5, 0.5, 0.5]);
    const metadata = await mmproj('gemma', { 'clip.projector_type': gv.str('gemma3'), 'clip.vision.image_size': gv.u32(896), 'clip.vision.patch_size': gv.u32(14), 'clip.vision.image_mean': half, 'clip.vision.image_std': half });
    expect(imageProcessorConfigFromGguf(metadata, 'gemma')).toMatchObject({ family: 'gemma3', geometry: 'llama.cpp', resample: 'bilinear', size: { width: 896, height: 896 }, tokensPerImage: 256 });
    expect(() => imageProcessorConfigFromGguf(metadata, 'gemma', { minPixels: 1 })).toThrow(/Qwen-VL only/);
  });

  it("reads a LLaVA-1.5 mmproj ('mlp'): letterboxed onto CLIP's mean colour, 576 tokens' grid", async () => {
    const metadata = await mmproj('llava', { 'clip.projector_type': gv.str('mlp'), 'clip.vision.image_size': gv.u32(336), 'clip.vision.patch_size': gv.u32(14), ...clipStats });
    expect(imageProcessorConfigFromGguf(metadata, 'llava')).toMatchObject({ family: 'llava', geometry: 'llama.cpp', cropSize: { width: 336, height: 336 }, padColor: [122, 116, 104] });
  });

  it("reads a LLaVA-1.6 mmproj's pinpoints as transformers' (height, width) pairs; refuses a 'flat' merge and odd lists", async () => {
    const base = { 'clip.vision.image_size': gv.u32(336), 'clip.vision.patch_size': gv.u32(14), 'clip.projector_type': gv.str('mlp'), ...clipStats };
    const next = await mmproj('next', { ...base, 'clip.vision.image_grid_pinpoints': gv.i32s([336, 672, 1008, 336]), 'clip.vision.mm_patch_merge_type': gv.str('spatial_unpad') });
    expect(imageProcessorConfigFromGguf(next, 'next')).toMatchObject({ family: 'llava_next', geometry: 'hf', gridPinpoints: [[336, 672], [1008, 336]] });
    const flat = await mmproj('flat', { ...base, 'clip.vision.image_grid_pinpoints': gv.i32s([336, 672]) });
    expect(() => imageProcessorConfigFromGguf(flat, 'flat')).toThrow(/mm_patch_merge_type 'flat' is not supported/);
    const odd = await mmproj('odd', { ...base, 'clip.vision.image_grid_pinpoints': gv.i32s([336, 672, 336]), 'clip.vision.mm_patch_merge_type': gv.str('spatial_unpad') });
    expect(() => imageProcessorConfigFromGguf(odd, 'odd')).toThrow(/image_grid_pinpoints must be an even number of integers/);
  });

  it('refuses unknown projectors and missing statistics by name', async () => {
    const base = { 'clip.vision.image_size': gv.u32(336), 'clip.vision.patch_size': gv.u32(14), ...clipStats };
    const ldp = await mmproj('ldp', { ...base, 'clip.projector_type': gv.str('ldp') });
    expect(() => imageProcessorConfigFromGguf(ldp, 'ldp')).toThrow(/'ldp' is not a supported vision projector/);
    const bare = await mmproj('bare', { 'clip.projector_type': gv.str('mlp'), 'clip.vision.image_size': gv.u32(336), 'clip.vision.patch_size': gv.u32(14) });
    expect(() => imageProcessorConfigFromGguf(bare, 'bare')).toThrow(/clip.vision.image_mean is required/);
  });
});
