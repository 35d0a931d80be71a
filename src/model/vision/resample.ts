// Pillow's `Image.resize` for 8-bit RGB (libImaging/Resample.c), which Hugging Face's slow image
// processors call and llama.cpp's mtmd reimplements: a separable convolution, horizontal pass
// then vertical, whose kernel widens by the downscale factor (antialiasing). Weights are turned
// into 22-bit fixed point and each pass rounds and clips to uint8, exactly as Pillow does, so the
// output matches PIL byte for byte rather than to within a float tolerance.
import type { RgbImage } from './rgb-image';

/** PIL's `Resampling` filters the three vision families use (2 = BILINEAR, 3 = BICUBIC). */
export type ResampleFilter = 'bilinear' | 'bicubic';

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);

const SUPPORT: Record<ResampleFilter, number> = { bilinear: 1, bicubic: 2 };

/** Pillow's bicubic uses a = -0.5 (PyTorch and OpenCV use -0.75). */
const BICUBIC_A = -0.5;

function filterWeight(filter: ResampleFilter, distance: number): number {
  const x = Math.abs(distance);
  if (filter === 'bilinear') return x < 1 ? 1 - x : 0;
  if (x < 1) return ((BICUBIC_A + 2) * x - (BICUBIC_A + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * BICUBIC_A;
  return 0;
}

/** For each output pixel: the first input pixel, how many follow, and their weights (sum 1). */
interface KernelRow {
  first: number;
  weights: number[];
}

/** Pillow's precompute_coeffs: pixel centres at +0.5, support scaled when shrinking. */
function kernelRows(inSize: number, outSize: number, filter: ResampleFilter): KernelRow[] {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = SUPPORT[filter] * filterScale;
  // Multiplying by the inverse, not dividing, keeps Pillow's last bit.
  const inverseScale = 1 / filterScale;
  const rows: KernelRow[] = [];
  for (let out = 0; out < outSize; out++) {
    const center = (out + 0.5) * scale;
    const first = Math.max(0, Math.trunc(center - support + 0.5));
    const end = Math.min(inSize, Math.trunc(center + support + 0.5));
    const weights: number[] = [];
    let sum = 0;
    for (let x = first; x < end; x++) {
      const w = filterWeight(filter, (x - center + 0.5) * inverseScale);
      weights.push(w);
      sum += w;
    }
    rows.push({ first, weights: sum === 0 ? weights : weights.map((w) => w / sum) });
  }
  return rows;
}

/** Flat tables: output i reads `counts[i]` inputs from `firsts[i]`, weights at i * stride. */
interface FixedKernels {
  firsts: Int32Array;
  counts: Int32Array;
  weights: Int32Array;
  stride: number;
}

/** Pillow rounds each weight half away from zero into fixed point. */
function fixedPoint(rows: KernelRow[]): FixedKernels {
  const stride = Math.max(...rows.map((row) => row.weights.length));
  const kernels = {
    firsts: Int32Array.from(rows, (row) => row.first),
    counts: Int32Array.from(rows, (row) => row.weights.length),
    weights: new Int32Array(rows.length * stride),
    stride,
  };
  rows.forEach(({ weights }, i) => {
    weights.forEach((w, k) => (kernels.weights[i * stride + k] = Math.trunc(w * ONE + (w < 0 ? -0.5 : 0.5))));
  });
  return kernels;
}

/** Accumulators stay within int32 as in Pillow (255 x the kernel's absolute sum x 2^22 < 2^31). */
function clip8(accumulator: number): number {
  const value = accumulator >> PRECISION_BITS;
  return value < 0 ? 0 : value > 255 ? 255 : value;
}

function resampleHorizontal(src: Uint8Array, inWidth: number, height: number, outWidth: number, filter: ResampleFilter): Uint8Array {
  const { firsts, counts, weights, stride } = fixedPoint(kernelRows(inWidth, outWidth, filter));
  const out = new Uint8Array(outWidth * height * 3);
  for (let y = 0; y < height; y++) {
    const rowStart = y * inWidth * 3;
    for (let x = 0; x < outWidth; x++) {
      let r = HALF, g = HALF, b = HALF;
      for (let k = 0, p = rowStart + firsts[x] * 3, w = x * stride; k < counts[x]; k++, p += 3, w++) {
        r = (r + src[p] * weights[w]) | 0;
        g = (g + src[p + 1] * weights[w]) | 0;
        b = (b + src[p + 2] * weights[w]) | 0;
      }
      const o = (y * outWidth + x) * 3;
      out[o] = clip8(r);
      out[o + 1] = clip8(g);
      out[o + 2] = clip8(b);
    }
  }
  return out;
}

function resampleVertical(src: Uint8Array, width: number, inHeight: number, outHeight: number, filter: ResampleFilter): Uint8Array {
  const { firsts, counts, weights, stride } = fixedPoint(kernelRows(inHeight, outHeight, filter));
  const rowBytes = width * 3;
  const out = new Uint8Array(rowBytes * outHeight);
  const accumulators = new Int32Array(rowBytes);
  for (let y = 0; y < outHeight; y++) {
    accumulators.fill(HALF);
    for (let k = 0; k < counts[y]; k++) {
      const rowStart = (firsts[y] + k) * rowBytes;
      const w = weights[y * stride + k];
      for (let i = 0; i < rowBytes; i++) accumulators[i] += src[rowStart + i] * w;
    }
    const outStart = y * rowBytes;
    for (let i = 0; i < rowBytes; i++) out[outStart + i] = clip8(accumulators[i]);
  }
  return out;
}

/** The image at width x height; the same image when the size does not change. */
export function resizeRgb(image: RgbImage, width: number, height: number, filter: ResampleFilter): RgbImage {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new Error(`resize target must be positive integers, got ${width}x${height}`);
  }
  if (width === image.width && height === image.height) return image;
  let data = image.data;
  if (width !== image.width) data = resampleHorizontal(data, image.width, image.height, width, filter);
  if (height !== image.height) data = resampleVertical(data, width, image.height, height, filter);
  return { width, height, data };
}
