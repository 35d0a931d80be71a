// Qwen2-VL's `smart_resize`: the size an image is resized to so both sides are multiples of
// `factor` (patch size x merge size) and its area lies within [minPixels, maxPixels], keeping the
// aspect ratio as closely as it can. Two versions: transformers' (float64, Python's round, which
// rounds halves to even, and its aspect-ratio error) and llama.cpp's (float32, halves away from
// zero, no error, every side at least `factor`).
import { ImageInputError } from './image-input-error';

export interface ImageSize {
  width: number;
  height: number;
}

export interface SmartResizeLimits {
  factor: number;
  minPixels: number;
  maxPixels: number;
}

const MAX_ASPECT_RATIO = 200;

/** Python 3's round(): halves go to the even neighbour. */
export function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

export function smartResize(height: number, width: number, { factor, minPixels, maxPixels }: SmartResizeLimits): ImageSize {
  const ratio = Math.max(height, width) / Math.min(height, width);
  if (ratio > MAX_ASPECT_RATIO) {
    throw new ImageInputError(`absolute aspect ratio must be smaller than ${MAX_ASPECT_RATIO}, got ${ratio}`);
  }
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return { width: w, height: h };
}

/** mtmd's calc_size_preserved_ratio, in float32 as clip.cpp computes it. */
export function smartResizeLlamaCpp(height: number, width: number, { factor, minPixels, maxPixels }: SmartResizeLimits): ImageSize {
  const f = Math.fround;
  const byFactor = (x: number, round: (v: number) => number) => round(f(f(x) / f(factor))) * factor;
  const halfAwayFromZero = (v: number) => Math.sign(v) * Math.round(Math.abs(v));
  let w = Math.max(factor, byFactor(width, halfAwayFromZero));
  let h = Math.max(factor, byFactor(height, halfAwayFromZero));
  if (maxPixels > 0 && h * w > maxPixels) {
    const beta = f(Math.sqrt(f(f(f(height) * f(width)) / f(maxPixels))));
    h = Math.max(factor, byFactor(f(height / beta), Math.floor));
    w = Math.max(factor, byFactor(f(width / beta), Math.floor));
  } else if (minPixels > 0 && h * w < minPixels) {
    const beta = f(Math.sqrt(f(f(minPixels) / f(f(height) * f(width)))));
    h = byFactor(f(height * beta), Math.ceil);
    w = byFactor(f(width * beta), Math.ceil);
  }
  return { width: w, height: h };
}
