// Rescale and normalise 8-bit RGB into the float32 planes a vision tower takes ([3, H, W]).
// The arithmetic follows transformers' numpy path: the rescale in float64 cast to float32, then
// (x - mean) / std in float32 with mean and std cast to float32.
import type { RgbImage } from './rgb-image';

export type Triple = readonly [number, number, number];

export interface PixelNormalization {
  /** 1/255 when do_rescale; 1 when not. */
  rescaleFactor: number;
  /** [0, 0, 0] and [1, 1, 1] when do_normalize is off. */
  mean: Triple;
  std: Triple;
}

export function toChannelsFirst(image: RgbImage, { rescaleFactor, mean, std }: PixelNormalization): Float32Array {
  const f = Math.fround;
  const plane = image.width * image.height;
  const out = new Float32Array(3 * plane);
  for (let c = 0; c < 3; c++) {
    // One lookup table per channel: 256 possible inputs.
    const table = new Float32Array(256);
    for (let v = 0; v < 256; v++) table[v] = f(f(f(v * rescaleFactor) - f(mean[c])) / f(std[c]));
    const base = c * plane;
    for (let i = 0; i < plane; i++) out[base + i] = table[image.data[i * 3 + c]];
  }
  return out;
}
