// What an image preprocessor needs to know, whichever file it came from: Hugging Face's
// preprocessor_config.json (+ processor_config.json, mm_processor_kwargs) or a GGUF mmproj's
// clip.vision.* metadata. `geometry` says whose resize rules apply: 'hf' stretches (Gemma 3),
// resizes the shortest edge and centre-crops (CLIP) or runs transformers' smart_resize (Qwen);
// 'llama.cpp' letterboxes fixed-size inputs and runs mtmd's float32 smart_resize.
import type { PixelNormalization, Triple } from './normalize';
import type { Rgb } from './letterbox';
import type { ResampleFilter } from './resample';

/** Gemma 3 (SigLIP), LLaVA-1.5 (CLIP ViT-L/14), LLaVA-NeXT (CLIP tiles), Qwen2-VL and Qwen2.5-VL. */
export type VisionFamily = 'gemma3' | 'llava' | 'llava_next' | 'qwen2_vl';

export type ResizeGeometry = 'hf' | 'llama.cpp';

interface ProcessorConfigBase {
  resample: ResampleFilter;
  normalization: PixelNormalization;
  geometry: ResizeGeometry;
}

export interface Gemma3ProcessorConfig extends ProcessorConfigBase {
  family: 'gemma3';
  /** The tower's fixed input (896 x 896). */
  size: { width: number; height: number };
  /** Soft tokens per image after the 4x4 average pool (mm_tokens_per_image, 256). */
  tokensPerImage: number;
}

export interface LlavaProcessorConfig extends ProcessorConfigBase {
  family: 'llava';
  /** CLIP's patch side (14): the image-token grid is cropSize / patchSize. */
  patchSize: number;
  /** 'hf': the shortest edge is resized to this, then the centre crop is taken. */
  shortestEdge: number;
  /** The tower's input (336 x 336); 'llama.cpp' letterboxes straight to it. */
  cropSize: { width: number; height: number };
  /** llama.cpp fills the letterbox with CLIP's mean colour. */
  padColor: Rgb;
  /** 'full' keeps the CLS token as an image token too (vision_feature_select_strategy). */
  featureSelect: 'default' | 'full';
}

/** LLaVA-NeXT (LlavaNextImageProcessor): the image on a grid of crop-size tiles plus the whole image at crop size. */
export interface LlavaNextProcessorConfig extends ProcessorConfigBase {
  family: 'llava_next';
  /** CLIP's patch side (14). */
  patchSize: number;
  /** The tower's input and the tile size (336 x 336). */
  cropSize: { width: number; height: number };
  /** image_grid_pinpoints as (height, width) pairs, transformers' order: the resolutions the tile grid may take. */
  gridPinpoints: ReadonlyArray<readonly [number, number]>;
}

export interface QwenVlProcessorConfig extends ProcessorConfigBase {
  family: 'qwen2_vl';
  /** The tower's patch side (14). */
  patchSize: number;
  minPixels: number;
  maxPixels: number;
  /** Patches merged per side before the LM (2): smart_resize's factor is patchSize * mergeSize. */
  mergeSize: number;
  /** Frames per temporal patch (2): a still image is repeated that many times. */
  temporalPatchSize: number;
}

export type ImageProcessorConfig = Gemma3ProcessorConfig | LlavaProcessorConfig | LlavaNextProcessorConfig | QwenVlProcessorConfig;

/** OpenAI CLIP's mean and std (transformers' OPENAI_CLIP_MEAN / OPENAI_CLIP_STD). */
export const OPENAI_CLIP_MEAN: Triple = [0.48145466, 0.4578275, 0.40821073];
export const OPENAI_CLIP_STD: Triple = [0.26862954, 0.26130258, 0.27577711];
