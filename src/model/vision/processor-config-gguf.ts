// Image processor configs from a GGUF mmproj file's metadata, as llama.cpp's clip.cpp reads
// them: clip.vision.image_size, patch_size, image_mean / image_std and the projector type, with
// mtmd's per-projector rules (filter, letterbox colour, Qwen's token limits). Geometry is
// 'llama.cpp', so such a model sees its images as llama.cpp would.
import type { GgufMetadata } from '../gguf/gguf-file';
import type { PixelNormalization } from './normalize';
import type { ImageProcessorConfig, LlavaNextProcessorConfig, QwenVlProcessorConfig } from './processor-config';
import { readPinpoints } from './processor-config-hf';
import { SettingsReader } from './settings-reader';

/** LLaVA's mmproj letterboxes onto CLIP's mean colour, in 8-bit. */
const LLAVA_PAD_COLOR = [122, 116, 104] as const;
/** Gemma 3 pools 64x64 patches to 16x16 unless the file says otherwise. */
const GEMMA3_DEFAULT_POOL = 4;
/** mtmd's image-token limits for Qwen2-VL / 2.5-VL (min, max). */
const QWEN_TOKEN_LIMITS = [8, 4096] as const;

export interface GgufProcessorOptions {
  /** Overrides of Qwen's pixel limits (mm_processor_kwargs; llama.cpp's --image-min/max-tokens). */
  minPixels?: number;
  maxPixels?: number;
}

function qwenVl(clip: SettingsReader, patchSize: number, options: GgufProcessorOptions): Omit<QwenVlProcessorConfig, 'normalization'> {
  const mergeSize = clip.integer('clip.vision.spatial_merge_size', 2);
  const tokenArea = (patchSize * mergeSize) ** 2;
  const minPixels = options.minPixels ?? QWEN_TOKEN_LIMITS[0] * tokenArea;
  const maxPixels = options.maxPixels ?? QWEN_TOKEN_LIMITS[1] * tokenArea;
  if (minPixels > maxPixels) clip.fail('min_pixels', `${minPixels} is larger than max_pixels ${maxPixels}`);
  return { family: 'qwen2_vl', geometry: 'llama.cpp', resample: 'bicubic', patchSize, mergeSize, temporalPatchSize: 2, minPixels, maxPixels };
}

const PINPOINTS = 'clip.vision.image_grid_pinpoints';

/**
 * A LLaVA-1.6 mmproj (llama.cpp's legacy converter): `mlp` with the pinpoints flattened from
 * transformers' (height, width) pairs. Its images are tiled as transformers does (geometry 'hf'):
 * llama.cpp's own slicing neither unpads nor ends rows with image_newline, so it cannot give
 * transformers' rows (docs/vision.md, LLaVA-NeXT).
 */
function llavaNext(clip: SettingsReader, imageSize: number, patchSize: number, normalization: PixelNormalization, source: string): LlavaNextProcessorConfig {
  const merge = clip.string('clip.vision.mm_patch_merge_type') ?? 'flat';
  if (merge !== 'spatial_unpad') clip.fail('clip.vision.mm_patch_merge_type', `'${merge}' is not supported; LLaVA-NeXT's anyres tiles need 'spatial_unpad'`);
  const crop = clip.integer('clip.vision.image_crop_resolution', imageSize);
  if (crop !== imageSize) clip.fail('clip.vision.image_crop_resolution', `${crop} differs from clip.vision.image_size ${imageSize}`);
  const flat = clip.raw(PINPOINTS);
  if (!Array.isArray(flat) || flat.length % 2 !== 0) clip.fail(PINPOINTS, `must be an even number of integers, got ${JSON.stringify(flat)}`);
  const pairs = Array.from({ length: flat.length / 2 }, (_, i) => [Number(flat[2 * i]), Number(flat[2 * i + 1])]);
  const gridPinpoints = readPinpoints(new SettingsReader({ [PINPOINTS]: pairs }, `${source} (mmproj)`), imageSize, PINPOINTS);
  const square = { width: imageSize, height: imageSize };
  return { family: 'llava_next', geometry: 'hf', resample: 'bicubic', normalization, patchSize, cropSize: square, gridPinpoints };
}

export function imageProcessorConfigFromGguf(metadata: GgufMetadata, source: string, options: GgufProcessorOptions = {}): ImageProcessorConfig {
  const clip = new SettingsReader(metadata, `${source} (mmproj)`);
  if (clip.raw('clip.has_vision_encoder') !== true) clip.fail('clip.has_vision_encoder', 'is not true: this file has no vision encoder');
  const projector = clip.string('clip.vision.projector_type') ?? clip.string('clip.projector_type');
  const imageSize = clip.integer('clip.vision.image_size');
  const patchSize = clip.integer('clip.vision.patch_size');
  const normalization = {
    rescaleFactor: 1 / 255,
    mean: clip.triple('clip.vision.image_mean'),
    std: clip.triple('clip.vision.image_std'),
  };
  const isQwen = projector === 'qwen2vl_merger' || projector === 'qwen2.5vl_merger';
  if (!isQwen && (options.minPixels !== undefined || options.maxPixels !== undefined)) {
    clip.fail('clip.projector_type', `'${projector}' has a fixed input size; min_pixels / max_pixels apply to Qwen-VL only`);
  }
  if (projector === 'gemma3') {
    const pool = clip.integer('clip.vision.projector.scale_factor', GEMMA3_DEFAULT_POOL);
    const side = Math.floor(imageSize / patchSize / pool);
    return { family: 'gemma3', geometry: 'llama.cpp', resample: 'bilinear', normalization, size: { width: imageSize, height: imageSize }, tokensPerImage: side * side };
  }
  if (projector === 'mlp') {
    if (clip.has(PINPOINTS)) return llavaNext(clip, imageSize, patchSize, normalization, source);
    const square = { width: imageSize, height: imageSize };
    return {
      family: 'llava', geometry: 'llama.cpp', resample: 'bicubic', normalization, patchSize,
      shortestEdge: imageSize, cropSize: square, padColor: LLAVA_PAD_COLOR, featureSelect: 'default',
    };
  }
  if (isQwen) return { ...qwenVl(clip, patchSize, options), normalization };
  return clip.fail('clip.projector_type', `'${projector}' is not a supported vision projector (gemma3, mlp, qwen2vl_merger, qwen2.5vl_merger)`);
}
