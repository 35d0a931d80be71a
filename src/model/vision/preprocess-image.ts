// The one entry point the vision towers call: a decoded image and its model's processor config
// in, the tower's input tensor and the prompt's image-token count out. One entry per family.
import { gemma3PlaceholderTokens, preprocessGemma3 } from './gemma3-preprocess';
import { llavaPlaceholderTokens, preprocessLlava } from './llava-preprocess';
import { llavaNextPlaceholderTokens, preprocessLlavaNext } from './llava-next-preprocess';
import type { PreprocessedImage } from './preprocessed-image';
import type { ImageProcessorConfig, VisionFamily } from './processor-config';
import { preprocessQwenVl, qwenVlPlaceholderTokens } from './qwen-vl-preprocess';
import type { RgbImage } from './rgb-image';

interface FamilyPreprocessor<C extends ImageProcessorConfig> {
  preprocess(config: C, image: RgbImage): PreprocessedImage;
  /** The token count alone, from the image's size, for budgeting before pixels are touched. */
  placeholderTokens(config: C, width: number, height: number): number;
}

type Registry = { [F in VisionFamily]: FamilyPreprocessor<Extract<ImageProcessorConfig, { family: F }>> };

const PREPROCESSORS: Registry = {
  gemma3: { preprocess: preprocessGemma3, placeholderTokens: gemma3PlaceholderTokens },
  llava: { preprocess: preprocessLlava, placeholderTokens: llavaPlaceholderTokens },
  llava_next: { preprocess: preprocessLlavaNext, placeholderTokens: llavaNextPlaceholderTokens },
  qwen2_vl: { preprocess: preprocessQwenVl, placeholderTokens: qwenVlPlaceholderTokens },
};

/** The entry is the one keyed by the config's own family, so it takes that config. */
function preprocessorFor(config: ImageProcessorConfig): FamilyPreprocessor<ImageProcessorConfig> {
  return PREPROCESSORS[config.family];
}

export function preprocessImage(config: ImageProcessorConfig, image: RgbImage): PreprocessedImage {
  return preprocessorFor(config).preprocess(config, image);
}

export function imagePlaceholderTokens(config: ImageProcessorConfig, width: number, height: number): number {
  return preprocessorFor(config).placeholderTokens(config, width, height);
}
