// Each family's preprocessor through the registry: output shape, image-token count and the
// normalised values, at the tower's native size (resize is the identity, so values are checked
// against the input pixels directly) and at other sizes (checked against resize + crop done
// here step by step). Qwen's patch order is checked against an index decoding written here.
import { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, type Gemma3ProcessorConfig, type LlavaProcessorConfig, type QwenVlProcessorConfig } from '../../../../src/model/vision/processor-config';
import { imagePlaceholderTokens, preprocessImage } from '../../../../src/model/vision/preprocess-image';
import { resizeRgb } from '../../../../src/model/vision/resample';
import type { RgbImage } from '../../../../src/model/vision/rgb-image';
import { randomImage } from './random-image';

const gemma3: Gemma3ProcessorConfig = {
  family: 'gemma3', geometry: 'hf', resample: 'bilinear', size: { width: 896, height: 896 }, tokensPerImage: 256,
  normalization: { rescaleFactor: 1 / 255, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] },
};
const llava: LlavaProcessorConfig = {
  family: 'llava', geometry: 'hf', resample: 'bicubic', patchSize: 14, shortestEdge: 336, cropSize: { width: 336, height: 336 },
  padColor: [0, 0, 0], featureSelect: 'default',
  normalization: { rescaleFactor: 1 / 255, mean: OPENAI_CLIP_MEAN, std: OPENAI_CLIP_STD },
};
const qwen: QwenVlProcessorConfig = {
  family: 'qwen2_vl', geometry: 'hf', resample: 'bicubic', patchSize: 14, mergeSize: 2, temporalPatchSize: 2,
  minPixels: 3136, maxPixels: 12845056,
  normalization: { rescaleFactor: 1 / 255, mean: OPENAI_CLIP_MEAN, std: OPENAI_CLIP_STD },
};

/** Channel c of pixel (x, y), normalised in float64. */
function expectedValue(image: RgbImage, x: number, y: number, c: number, mean: readonly number[], std: readonly number[]): number {
  return (image.data[(y * image.width + x) * 3 + c] / 255 - mean[c]) / std[c];
}

function expectPlanes(planes: Float32Array, image: RgbImage, mean: readonly number[], std: readonly number[]): void {
  const plane = image.width * image.height;
  let worst = 0;
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < image.height; y++) {
      for (let x = 0; x < image.width; x++) {
        worst = Math.max(worst, Math.abs(planes[c * plane + y * image.width + x] - expectedValue(image, x, y, c, mean, std)));
      }
    }
  }
  // float32 rounding of values within about ±2.2.
  expect(worst).toBeLessThan(1e-6);
}

describe('fixed-size towers at their native size (resize is the identity)', () => {
  it.each([
    ['Gemma 3: 896x896, values rescaled to [-1, 1], 256 image tokens', gemma3, 896, 256],
    ['LLaVA-1.5: 336x336, CLIP-normalised, 576 image tokens', llava, 336, 576],
  ] as const)('%s', (_name, config, side, tokens) => {
    const image = randomImage(side, side, side);
    const out = preprocessImage(config, image);
    expect(out.shape).toEqual([1, 3, side, side]);
    expect(out.placeholderTokens).toBe(tokens);
    expect(out.gridThw).toBeUndefined();
    expectPlanes(out.pixelValues, image, config.normalization.mean, config.normalization.std);
  });
});

describe('Gemma 3', () => {
  it('stretches any other size to 896x896 with the bilinear filter', () => {
    const image = randomImage(120, 75, 4);
    const out = preprocessImage(gemma3, image);
    expect(out.shape).toEqual([1, 3, 896, 896]);
    expectPlanes(out.pixelValues, resizeRgb(image, 896, 896, 'bilinear'), [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]);
  });

  it('letterboxes onto black under llama.cpp geometry', () => {
    const small = { ...gemma3, geometry: 'llama.cpp' as const, size: { width: 32, height: 32 } };
    const image = { width: 16, height: 8, data: new Uint8Array(16 * 8 * 3).fill(255) };
    const out = preprocessImage(small, image);
    // 16x8 fits 32x32 as 32x16, centred: rows 8..23 white (1.0), the rest black (-1.0).
    const red = out.pixelValues.subarray(0, 32 * 32);
    expect(red[0]).toBe(-1);
    expect(red[8 * 32]).toBe(1);
    expect(red[23 * 32 + 31]).toBe(1);
    expect(red[24 * 32]).toBe(-1);
  });
});

describe('LLaVA-1.5 (CLIP)', () => {
  it('resizes the shortest edge to 336 (the other truncated) and takes the centre crop', () => {
    const image = randomImage(500, 401, 6);
    // 500 * 336 / 401 = 418.95 -> 418; crop left = (418 - 336) / 2 = 41.
    const resized = resizeRgb(image, 418, 336, 'bicubic');
    const crop = new Uint8Array(336 * 336 * 3);
    for (let y = 0; y < 336; y++) crop.set(resized.data.subarray((y * 418 + 41) * 3, (y * 418 + 41 + 336) * 3), y * 336 * 3);
    const out = preprocessImage(llava, image);
    expect(out.shape).toEqual([1, 3, 336, 336]);
    expectPlanes(out.pixelValues, { width: 336, height: 336, data: crop }, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD);
  });

  it("counts the class token too under the 'full' feature strategy", () => {
    expect(imagePlaceholderTokens({ ...llava, featureSelect: 'full' }, 800, 600)).toBe(577);
  });
});

describe('Qwen2-VL / Qwen2.5-VL', () => {
  /** The value transformers' permute puts at (row, column), found by decoding both indices. */
  function patchValue(planes: Float32Array, width: number, height: number, gridW: number, row: number, column: number): number {
    const m = 2;
    const p = 14;
    const blockIndex = Math.floor(row / (m * m));
    const hBlock = Math.floor(blockIndex / (gridW / m));
    const wBlock = blockIndex % (gridW / m);
    const hIn = Math.floor((row % (m * m)) / m);
    const wIn = row % m;
    const c = Math.floor(column / (2 * p * p));
    const within = column % (p * p);
    const y = (hBlock * m + hIn) * p + Math.floor(within / p);
    const x = (wBlock * m + wIn) * p + (within % p);
    return planes[c * width * height + y * width + x];
  }

  /** Every patch value against the normalised pixels of `sized` (the image after smart_resize). */
  function expectPatches(pixelValues: Float32Array, sized: RgbImage): void {
    const { width, height } = sized;
    const planes = new Float32Array(3 * width * height);
    for (let c = 0; c < 3; c++) {
      for (let i = 0; i < width * height; i++) {
        planes[c * width * height + i] = Math.fround(expectedValue(sized, i % width, Math.floor(i / width), c, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD));
      }
    }
    const rows = (width / 14) * (height / 14);
    let worst = 0;
    for (let row = 0; row < rows; row++) {
      for (let column = 0; column < 1176; column++) {
        worst = Math.max(worst, Math.abs(pixelValues[row * 1176 + column] - patchValue(planes, width, height, width / 14, row, column)));
      }
    }
    expect(worst).toBeLessThan(1e-6);
  }

  it.each([
    // Native: sides are multiples of 28 and the area is within the limits.
    ['a native 84x56 as it is', 84, 56, 84, 56],
    // smart_resize(61, 100): round(2.18) = 2, round(3.57) = 4 -> 56 x 112, 6272 pixels >= 3136.
    ['100x61 resized by smart_resize to 112x56 with bicubic', 100, 61, 112, 56],
  ])('%s: merge-ordered patches over 2 frames, a token per 2x2 block', (_name, width, height, sizedWidth, sizedHeight) => {
    const image = randomImage(width, height, width + height);
    const out = preprocessImage(qwen, image);
    const [gridH, gridW] = [sizedHeight / 14, sizedWidth / 14];
    expect(out.gridThw).toEqual([1, gridH, gridW]);
    expect(out.shape).toEqual([gridH * gridW, 1176]);
    expect(out.placeholderTokens).toBe((gridH * gridW) / 4);
    expect(imagePlaceholderTokens(qwen, width, height)).toBe((gridH * gridW) / 4);
    expectPatches(out.pixelValues, resizeRgb(image, sizedWidth, sizedHeight, 'bicubic'));
  });

  it('refuses an extreme aspect ratio before any work', () => {
    expect(() => imagePlaceholderTokens(qwen, 4000, 10)).toThrow(/aspect ratio/);
  });
});

describe('input checks', () => {
  it('refuses a buffer that does not match the size', () => {
    expect(() => preprocessImage(gemma3, { width: 4, height: 4, data: new Uint8Array(47) })).toThrow(/needs 48 bytes, got 47/);
  });
});
