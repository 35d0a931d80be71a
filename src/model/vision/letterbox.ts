// llama.cpp's fixed-size fit (mtmd img_tool::resize with PAD_CEIL): scale the image to fit inside
// the target keeping its aspect ratio (sides rounded up, in float32 as clip.cpp computes them),
// then centre it on a canvas of one colour. Hugging Face stretches (Gemma 3) or crops (CLIP)
// instead, so the two agree only at the target size.
import { resizeRgb, type ResampleFilter } from './resample';
import type { RgbImage } from './rgb-image';

export type Rgb = readonly [number, number, number];

export function letterboxRgb(image: RgbImage, width: number, height: number, filter: ResampleFilter, padColor: Rgb): RgbImage {
  if (width === image.width && height === image.height) return image;
  const f = Math.fround;
  const scale = Math.min(f(f(width) / f(image.width)), f(f(height) / f(image.height)));
  const fitWidth = Math.min(Math.ceil(f(image.width * scale)), width);
  const fitHeight = Math.min(Math.ceil(f(image.height * scale)), height);
  const fitted = resizeRgb(image, fitWidth, fitHeight, filter);
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) data.set(padColor, i * 3);
  const left = Math.floor((width - fitWidth) / 2);
  const top = Math.floor((height - fitHeight) / 2);
  for (let y = 0; y < fitHeight; y++) {
    const row = fitted.data.subarray(y * fitWidth * 3, (y + 1) * fitWidth * 3);
    data.set(row, ((top + y) * width + left) * 3);
  }
  return { width, height, data };
}
