// LLaVA-NeXT (LlavaNextImageProcessor, 'anyres'): the image resized to fit its best grid
// resolution (image_grid_pinpoints), padded with black to it (centred, the odd pixel right and
// below), cut into crop-size tiles row by row; before them the whole image stretched to the crop
// size. Each of the 1 + tiles images is then rescaled and normalised as CLIP's.
import { anyresGrid, patchOutputSize, selectBestResolution, unpaddedRegion, type HeightWidth } from './anyres';
import { toChannelsFirst } from './normalize';
import type { PreprocessedImage } from './preprocessed-image';
import type { LlavaNextProcessorConfig } from './processor-config';
import { resizeRgb } from './resample';
import { checkRgbImage, type RgbImage } from './rgb-image';

/** The image resized inside `target` and centred on black (transformers' _resize_for_patching + _pad_for_patching). */
export function resizeAndPad(image: RgbImage, target: HeightWidth, filter: LlavaNextProcessorConfig['resample']): RgbImage {
  const [height, width] = target;
  const [fitHeight, fitWidth] = patchOutputSize(image.height, image.width, target);
  const fitted = resizeRgb(image, fitWidth, fitHeight, filter);
  const data = new Uint8Array(width * height * 3);
  const left = Math.floor((width - fitWidth) / 2);
  const top = Math.floor((height - fitHeight) / 2);
  for (let y = 0; y < fitHeight; y++) data.set(fitted.data.subarray(y * fitWidth * 3, (y + 1) * fitWidth * 3), ((top + y) * width + left) * 3);
  return { width, height, data };
}

/** transformers' divide_to_patches: `side` x `side` tiles, row by row. */
export function cutTiles(image: RgbImage, side: number): RgbImage[] {
  const tiles: RgbImage[] = [];
  for (let top = 0; top < image.height; top += side) {
    for (let left = 0; left < image.width; left += side) {
      const height = Math.min(side, image.height - top);
      const width = Math.min(side, image.width - left);
      const data = new Uint8Array(width * height * 3);
      for (let y = 0; y < height; y++) {
        const start = ((top + y) * image.width + left) * 3;
        data.set(image.data.subarray(start, start + width * 3), y * width * 3);
      }
      tiles.push({ width, height, data });
    }
  }
  return tiles;
}

export function preprocessLlavaNext(config: LlavaNextProcessorConfig, image: RgbImage): PreprocessedImage {
  checkRgbImage(image);
  const { width: side, height: sideHeight } = config.cropSize;
  if (side !== sideHeight) throw new Error(`LLaVA-NeXT tiles must be square, got crop size ${side}x${sideHeight}`);
  const best = selectBestResolution(image.height, image.width, config.gridPinpoints);
  const tiles = cutTiles(resizeAndPad(image, best, config.resample), side);
  const base = resizeRgb(image, side, side, config.resample);
  const all = [base, ...tiles];
  const plane = 3 * side * side;
  const pixelValues = new Float32Array(all.length * plane);
  all.forEach((tile, i) => pixelValues.set(toChannelsFirst(tile, config.normalization), i * plane));
  return {
    pixelValues,
    shape: [all.length, 3, side, side],
    placeholderTokens: llavaNextPlaceholderTokens(config, image.width, image.height),
    imageSize: { width: image.width, height: image.height },
    tileGrid: anyresGrid(image.height, image.width, config.gridPinpoints, side),
  };
}

/** vLLM's get_num_image_tokens for llava_next: the base image's patches, then the unpadded grid with a newline per row. */
export function llavaNextPlaceholderTokens(config: LlavaNextProcessorConfig, width: number, height: number): number {
  const patches = Math.floor(config.cropSize.width / config.patchSize);
  const { rows, columns } = anyresGrid(height, width, config.gridPinpoints, config.cropSize.width);
  const kept = unpaddedRegion(height, width, patches * rows, patches * columns);
  return patches * patches + kept.height * kept.width + kept.height;
}
