// Qwen2-VL / Qwen2.5-VL (Qwen2VLImageProcessor): smart_resize, normalise, then cut into
// patch x patch squares, each repeated over `temporalPatchSize` frames (a still image is a clip of
// identical frames), ordered so each merge x merge block of neighbours is consecutive: rows are
// (t, h-block, w-block, h-in-block, w-in-block), columns (channel, frame, y, x), as transformers'
// reshape and permute(0, 3, 6, 4, 7, 2, 1, 5, 8) lays them out.
import { toChannelsFirst } from './normalize';
import type { PreprocessedImage } from './preprocessed-image';
import type { QwenVlProcessorConfig } from './processor-config';
import { resizeRgb } from './resample';
import { checkRgbImage, type RgbImage } from './rgb-image';
import { smartResize, smartResizeLlamaCpp, type ImageSize } from './smart-resize';

export function qwenVlResizedSize(config: QwenVlProcessorConfig, width: number, height: number): ImageSize {
  const limits = { factor: config.patchSize * config.mergeSize, minPixels: config.minPixels, maxPixels: config.maxPixels };
  return config.geometry === 'hf' ? smartResize(height, width, limits) : smartResizeLlamaCpp(height, width, limits);
}

export function qwenVlPlaceholderTokens(config: QwenVlProcessorConfig, width: number, height: number): number {
  const size = qwenVlResizedSize(config, width, height);
  return (size.height / config.patchSize) * (size.width / config.patchSize) / (config.mergeSize * config.mergeSize);
}

export function preprocessQwenVl(config: QwenVlProcessorConfig, image: RgbImage): PreprocessedImage {
  checkRgbImage(image);
  const size = qwenVlResizedSize(config, image.width, image.height);
  const planes = toChannelsFirst(resizeRgb(image, size.width, size.height, config.resample), config.normalization);
  const { patchSize: p, mergeSize: m, temporalPatchSize: frames } = config;
  const gridH = size.height / p;
  const gridW = size.width / p;
  const columns = 3 * frames * p * p;
  const plane = size.width * size.height;
  const out = new Float32Array(gridH * gridW * columns);
  let row = 0;
  for (let hBlock = 0; hBlock < gridH / m; hBlock++) {
    for (let wBlock = 0; wBlock < gridW / m; wBlock++) {
      for (let hIn = 0; hIn < m; hIn++) {
        for (let wIn = 0; wIn < m; wIn++, row++) {
          const top = (hBlock * m + hIn) * p;
          const left = (wBlock * m + wIn) * p;
          let column = row * columns;
          for (let c = 0; c < 3; c++) {
            for (let t = 0; t < frames; t++) {
              for (let y = 0; y < p; y++) {
                const start = c * plane + (top + y) * size.width + left;
                out.set(planes.subarray(start, start + p), column);
                column += p;
              }
            }
          }
        }
      }
    }
  }
  return {
    pixelValues: out,
    shape: [gridH * gridW, columns],
    placeholderTokens: (gridH * gridW) / (m * m),
    gridThw: [1, gridH, gridW],
  };
}
