// Gemma 3 (Gemma3ImageProcessor, SigLIP): the whole image to the tower's fixed size, rescaled
// and normalised. Pan-and-scan crops are refused when the config is parsed.
import { letterboxRgb } from './letterbox';
import { toChannelsFirst } from './normalize';
import type { PreprocessedImage } from './preprocessed-image';
import type { Gemma3ProcessorConfig } from './processor-config';
import { resizeRgb } from './resample';
import { checkRgbImage, type RgbImage } from './rgb-image';

/** llama.cpp letterboxes onto black (mtmd's default pad colour). */
const LLAMA_CPP_PAD = [0, 0, 0] as const;

export function preprocessGemma3(config: Gemma3ProcessorConfig, image: RgbImage): PreprocessedImage {
  checkRgbImage(image);
  const { width, height } = config.size;
  const sized =
    config.geometry === 'hf'
      ? resizeRgb(image, width, height, config.resample)
      : letterboxRgb(image, width, height, config.resample, LLAMA_CPP_PAD);
  return {
    pixelValues: toChannelsFirst(sized, config.normalization),
    shape: [1, 3, height, width],
    placeholderTokens: config.tokensPerImage,
  };
}

export function gemma3PlaceholderTokens(config: Gemma3ProcessorConfig): number {
  return config.tokensPerImage;
}
