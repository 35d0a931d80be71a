// Image processor configs from a Hugging Face checkpoint: preprocessor_config.json (the image
// processor's own settings, defaults as transformers' classes), processor_config.json (the
// processor's token counts) and vLLM's mm_processor_kwargs, which may override what the
// family's processor lets a call override. Settings that would change the output and are not
// implemented are refused by name.
import { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, type Gemma3ProcessorConfig, type ImageProcessorConfig, type LlavaNextProcessorConfig, type LlavaProcessorConfig, type QwenVlProcessorConfig } from './processor-config';
import type { PixelNormalization, Triple } from './normalize';
import type { ResampleFilter } from './resample';
import { SettingsReader } from './settings-reader';

export interface HfProcessorFiles {
  /** preprocessor_config.json. */
  preprocessor: Record<string, unknown>;
  /** processor_config.json, when the checkpoint has one. */
  processor?: Record<string, unknown> | null;
  /** vLLM's --mm-processor-kwargs (or a request's). */
  mmProcessorKwargs?: Record<string, unknown>;
  /** config.json's vision_config.patch_size, for processors that do not repeat it (CLIP). */
  visionPatchSize?: number;
  /** config.json's mm_tokens_per_image (Gemma 3). */
  mmTokensPerImage?: number;
  /** config.json's image_grid_pinpoints (LLaVA-NeXT): the model lays its tiles out by these, so they must be the processor's. */
  modelGridPinpoints?: unknown;
  /** Names the checkpoint in messages. */
  source: string;
}

/** PIL's Resampling enum values. */
const PIL_FILTERS: Record<number, string> = { 0: 'NEAREST', 1: 'LANCZOS', 2: 'BILINEAR', 3: 'BICUBIC', 4: 'BOX', 5: 'HAMMING' };

const IMAGENET_STANDARD: Triple = [0.5, 0.5, 0.5];

/** Fields that name things or say what the input already is (RGB), not how to process it. */
const DESCRIPTIVE = ['image_processor_type', 'processor_class', 'feature_extractor_type'];

function resampleFilter(settings: SettingsReader, fallback: number): ResampleFilter {
  const code = settings.raw('resample') ?? fallback;
  if (code === 2) return 'bilinear';
  if (code === 3) return 'bicubic';
  return settings.fail('resample', `${JSON.stringify(code)} (${PIL_FILTERS[code as number] ?? 'unknown'}) is not supported; only 2 (BILINEAR) and 3 (BICUBIC)`);
}

function requireDefault(settings: SettingsReader, key: string, expected: boolean): void {
  if (settings.bool(key, expected) !== expected) settings.fail(key, `${!expected} is not supported`);
}

function normalization(settings: SettingsReader, mean: Triple, std: Triple): PixelNormalization {
  const rescale = settings.bool('do_rescale', true);
  const rescaleFactor = settings.number('rescale_factor', 1 / 255);
  const normalize = settings.bool('do_normalize', true);
  const imageMean = settings.triple('image_mean', mean);
  const imageStd = settings.triple('image_std', std);
  return {
    rescaleFactor: rescale ? rescaleFactor : 1,
    mean: normalize ? imageMean : [0, 0, 0],
    std: normalize ? imageStd : [1, 1, 1],
  };
}

function sizeOf(settings: SettingsReader, key: string, fallback: number): { width: number; height: number } {
  const size = settings.object(key);
  if (!size) return { width: fallback, height: fallback };
  const result = { height: size.integer('height'), width: size.integer('width') };
  size.refuseUnread();
  return result;
}

function gemma3(settings: SettingsReader, processor: SettingsReader, kwargs: SettingsReader, files: HfProcessorFiles): Gemma3ProcessorConfig {
  requireDefault(settings, 'do_resize', true);
  requireDefault(settings, 'do_pan_and_scan', false);
  requireDefault(kwargs, 'do_pan_and_scan', false);
  // Only read when pan-and-scan is on.
  settings.accept('pan_and_scan_min_crop_size', 'pan_and_scan_max_num_crops', 'pan_and_scan_min_ratio_to_activate');
  const fromProcessor = processor.raw('image_seq_length');
  const fromPreprocessor = settings.raw('image_seq_length');
  const tokens = fromProcessor ?? fromPreprocessor ?? files.mmTokensPerImage ?? 256;
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens <= 0) settings.fail('image_seq_length', `must be a positive integer, got ${JSON.stringify(tokens)}`);
  return {
    family: 'gemma3',
    geometry: 'hf',
    size: sizeOf(settings, 'size', 224),
    resample: resampleFilter(settings, 2),
    normalization: normalization(settings, IMAGENET_STANDARD, IMAGENET_STANDARD),
    tokensPerImage: tokens,
  };
}

function llava(settings: SettingsReader, processor: SettingsReader, files: HfProcessorFiles): LlavaProcessorConfig {
  if (settings.has('image_grid_pinpoints')) settings.fail('image_grid_pinpoints', "is LLaVA-NeXT's anyres tiling, which is not supported yet");
  requireDefault(settings, 'do_resize', true);
  requireDefault(settings, 'do_center_crop', true);
  const size = settings.object('size');
  const shortestEdge = size ? size.integer('shortest_edge') : 224;
  size?.refuseUnread();
  const cropSize = sizeOf(settings, 'crop_size', 224);
  if (cropSize.width > shortestEdge || cropSize.height > shortestEdge) {
    settings.fail('crop_size', `${cropSize.width}x${cropSize.height} is larger than the resized shortest edge ${shortestEdge} (padding is not supported)`);
  }
  const { patchSize, strategy } = clipFeatures(processor, files);
  return {
    family: 'llava',
    geometry: 'hf',
    shortestEdge,
    cropSize,
    resample: resampleFilter(settings, 3),
    normalization: normalization(settings, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD),
    patchSize,
    padColor: [0, 0, 0],
    featureSelect: strategy,
  };
}

/** processor_config.json's patch size (else config.json's vision_config) and its CLIP feature selection. */
function clipFeatures(processor: SettingsReader, files: HfProcessorFiles): { patchSize: number; strategy: 'default' | 'full' } {
  const patchSize = processor.has('patch_size') ? processor.integer('patch_size') : files.visionPatchSize;
  if (patchSize === undefined) processor.fail('patch_size', "is required (processor_config.json's patch_size or config.json's vision_config.patch_size)");
  const strategy = processor.string('vision_feature_select_strategy') ?? 'default';
  if (strategy !== 'default' && strategy !== 'full') processor.fail('vision_feature_select_strategy', `must be 'default' or 'full', got '${strategy}'`);
  if (processor.has('num_additional_image_tokens') && processor.integer('num_additional_image_tokens') !== 1) {
    processor.fail('num_additional_image_tokens', 'other than 1 (CLIP\'s class token) is not supported');
  }
  return { patchSize, strategy };
}

function llavaNext(settings: SettingsReader, processor: SettingsReader, files: HfProcessorFiles): LlavaNextProcessorConfig {
  requireDefault(settings, 'do_resize', true);
  // Pads the tile count of a batch's images to the largest; the model drops the padding tiles.
  settings.accept('do_pad');
  const mode = settings.string('aspect_ratio_setting') ?? 'anyres';
  if (mode !== 'anyres') settings.fail('aspect_ratio_setting', `'${mode}' is not supported (anyres)`);
  const cropSize = sizeOf(settings, 'crop_size', 224);
  const size = settings.object('size');
  const shortestEdge = size ? size.integer('shortest_edge') : 224;
  size?.refuseUnread();
  // Tiles are cut at the crop size and then resized and cropped again: only the identity is supported.
  if (cropSize.width !== cropSize.height || shortestEdge !== cropSize.width) {
    settings.fail('size', `shortest_edge ${shortestEdge} with crop_size ${cropSize.width}x${cropSize.height} is not supported; LLaVA-NeXT tiles need both square and equal`);
  }
  settings.bool('do_center_crop', true);
  const gridPinpoints = readPinpoints(settings, cropSize.width);
  if (files.modelGridPinpoints !== undefined && JSON.stringify(files.modelGridPinpoints) !== JSON.stringify(gridPinpoints)) {
    settings.fail('image_grid_pinpoints', `${JSON.stringify(gridPinpoints)} differs from config.json's ${JSON.stringify(files.modelGridPinpoints)}`);
  }
  const { patchSize, strategy } = clipFeatures(processor, files);
  if (strategy !== 'default') processor.fail('vision_feature_select_strategy', `'${strategy}' is not supported for LLaVA-NeXT (default)`);
  return {
    family: 'llava_next',
    geometry: 'hf',
    cropSize,
    patchSize,
    gridPinpoints,
    resample: resampleFilter(settings, 3),
    normalization: normalization(settings, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD),
  };
}

/** image_grid_pinpoints: (height, width) pairs, each a whole number of tiles. */
export function readPinpoints(settings: SettingsReader, tileSide: number, key = 'image_grid_pinpoints'): Array<[number, number]> {
  const raw = settings.raw(key) ?? [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]];
  const valid = Array.isArray(raw) && raw.length > 0 && raw.every((p) => Array.isArray(p) && p.length === 2 && p.every((v) => Number.isInteger(v) && v > 0 && v % tileSide === 0));
  if (!valid) settings.fail(key, `must be a list of [height, width] pairs in whole ${tileSide}-pixel tiles, got ${JSON.stringify(raw)}`);
  return (raw as number[][]).map(([h, w]) => [h, w]);
}

function qwenVl(settings: SettingsReader, kwargs: SettingsReader): QwenVlProcessorConfig {
  requireDefault(settings, 'do_resize', true);
  // Newer files say size: {shortest_edge: min_pixels, longest_edge: max_pixels}.
  const size = settings.object('size');
  const minFromSize = size?.has('shortest_edge') ? size.integer('shortest_edge') : undefined;
  const maxFromSize = size?.has('longest_edge') ? size.integer('longest_edge') : undefined;
  size?.refuseUnread();
  const fileMin = settings.integer('min_pixels', minFromSize ?? 56 * 56);
  const fileMax = settings.integer('max_pixels', maxFromSize ?? 28 * 28 * 1280);
  const minPixels = kwargs.integer('min_pixels', fileMin);
  const maxPixels = kwargs.integer('max_pixels', fileMax);
  if (minPixels > maxPixels) kwargs.fail('min_pixels', `${minPixels} is larger than max_pixels ${maxPixels}`);
  return {
    family: 'qwen2_vl',
    geometry: 'hf',
    minPixels,
    maxPixels,
    patchSize: settings.integer('patch_size', 14),
    mergeSize: settings.integer('merge_size', 2),
    temporalPatchSize: settings.integer('temporal_patch_size', 2),
    resample: resampleFilter(settings, 3),
    normalization: normalization(settings, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD),
  };
}

export function imageProcessorConfigFromHf(files: HfProcessorFiles): ImageProcessorConfig {
  const settings = new SettingsReader(files.preprocessor, `${files.source}: preprocessor_config.json`);
  const processor = new SettingsReader(files.processor ?? {}, `${files.source}: processor_config.json`);
  const kwargs = new SettingsReader(files.mmProcessorKwargs ?? {}, `${files.source}: mm_processor_kwargs`);
  const type = (settings.string('image_processor_type') ?? '').replace(/Fast$/, '');
  settings.accept(...DESCRIPTIVE);
  requireDefault(settings, 'do_convert_rgb', true);
  let config: ImageProcessorConfig;
  if (type === 'Gemma3ImageProcessor') config = gemma3(settings, processor, kwargs, files);
  else if (type === 'CLIPImageProcessor') config = llava(settings, processor, files);
  else if (type === 'Qwen2VLImageProcessor') config = qwenVl(settings, kwargs);
  else if (type === 'LlavaNextImageProcessor') config = llavaNext(settings, processor, files);
  else return settings.fail('image_processor_type', `'${type}' is not a supported image processor (Gemma3ImageProcessor, CLIPImageProcessor, LlavaNextImageProcessor, Qwen2VLImageProcessor)`);
  settings.refuseUnread();
  kwargs.refuseUnread();
  return config;
}
