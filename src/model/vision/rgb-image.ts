// The decoded image every preprocessor takes: 8-bit RGB, rows top to bottom, pixels interleaved
// (R, G, B), as the serving side's decoder hands it over.
import { ImageInputError } from './image-input-error';

export interface RgbImage {
  width: number;
  height: number;
  /** width * height * 3 bytes, row-major HWC. */
  data: Uint8Array;
}

export function checkRgbImage(image: RgbImage): void {
  const { width, height, data } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new ImageInputError(`image size must be positive integers, got ${width}x${height}`);
  }
  if (data.length !== width * height * 3) {
    throw new ImageInputError(`a ${width}x${height} RGB image needs ${width * height * 3} bytes, got ${data.length}`);
  }
}
