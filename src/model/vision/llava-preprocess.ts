// LLaVA-1.5 (CLIPImageProcessor): the shortest edge to `shortestEdge` (the other side scaled and
// truncated as transformers' get_resize_output_image_size does), then the centre crop; llama.cpp
// letterboxes onto CLIP's mean colour instead.
import { letterboxRgb } from './letterbox';
import { toChannelsFirst } from './normalize';
import type { PreprocessedImage } from './preprocessed-image';
import type { LlavaProcessorConfig } from './processor-config';
import { resizeRgb } from './resample';
import { checkRgbImage, type RgbImage } from './rgb-image';
import type { ImageSize } from './smart-resize';

export function shortestEdgeSize(width: number, height: number, shortestEdge: number): ImageSize {
  const [short, long] = width <= height ? [width, height] : [height, width];
  const newLong = Math.trunc((shortestEdge * long) / short);
  return width <= height ? { width: shortestEdge, height: newLong } : { width: newLong, height: shortestEdge };
}

export function centerCrop(image: RgbImage, width: number, height: number): RgbImage {
  if (width === image.width && height === image.height) return image;
  const top = Math.floor((image.height - height) / 2);
  const left = Math.floor((image.width - width) / 2);
  if (top < 0 || left < 0) throw new Error(`cannot crop ${width}x${height} out of ${image.width}x${image.height}`);
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const start = ((top + y) * image.width + left) * 3;
    data.set(image.data.subarray(start, start + width * 3), y * width * 3);
  }
  return { width, height, data };
}

export function preprocessLlava(config: LlavaProcessorConfig, image: RgbImage): PreprocessedImage {
  checkRgbImage(image);
  const { width, height } = config.cropSize;
  let sized: RgbImage;
  if (config.geometry === 'hf') {
    const scaled = shortestEdgeSize(image.width, image.height, config.shortestEdge);
    sized = centerCrop(resizeRgb(image, scaled.width, scaled.height, config.resample), width, height);
  } else {
    sized = letterboxRgb(image, width, height, config.resample, config.padColor);
  }
  return {
    pixelValues: toChannelsFirst(sized, config.normalization),
    shape: [1, 3, height, width],
    placeholderTokens: llavaPlaceholderTokens(config),
  };
}

/** CLIP's patch grid (576 at 336 / 14), plus the CLS token under 'full'. */
export function llavaPlaceholderTokens(config: LlavaProcessorConfig): number {
  const patches = Math.floor(config.cropSize.height / config.patchSize) * Math.floor(config.cropSize.width / config.patchSize);
  return config.featureSelect === 'full' ? patches + 1 : patches;
}
