// Qwen's smart_resize: transformers' rules (Python's half-to-even round, the aspect-ratio error)
// and llama.cpp's float32 version. Expected sizes were worked out with Python's round and
// math.floor/ceil (and numpy float32 for llama.cpp's), not with the code under test.
import { ImageInputError } from '../../../../src/model/vision/image-input-error';
import { roundHalfEven, smartResize, smartResizeLlamaCpp } from '../../../../src/model/vision/smart-resize';

const HF_DEFAULTS = { factor: 28, minPixels: 56 * 56, maxPixels: 28 * 28 * 1280 };
const QWEN25_FILE = { factor: 28, minPixels: 3136, maxPixels: 12845056 };
const NO_LIMITS = { factor: 28, minPixels: 1, maxPixels: 1e9 };
const LLAMA_CPP = { factor: 28, minPixels: 8 * 784, maxPixels: 4096 * 784 };

describe('smartResize (transformers)', () => {
  it.each([
    ['native size', 448, 448, HF_DEFAULTS, 448, 448],
    ['halves round to even (1.5 -> 2, 2.5 -> 2)', 42, 70, NO_LIMITS, 56, 56],
    ['halves round to even (2.5 -> 2, 3.5 -> 4)', 70, 98, NO_LIMITS, 56, 112],
    ['a 1x1 image grows to min_pixels', 1, 1, HF_DEFAULTS, 56, 56],
    ['too many pixels shrink under max_pixels', 4000, 3000, HF_DEFAULTS, 1148, 840],
    ['a large photo within the file limits', 3000, 4000, QWEN25_FILE, 2996, 4004],
    ['a Full HD frame', 1080, 1920, HF_DEFAULTS, 728, 1316],
    ['aspect ratio exactly 200 is allowed', 10, 2000, HF_DEFAULTS, 28, 812],
    ['a thin strip under the factor', 5, 900, HF_DEFAULTS, 28, 756],
    ['a long panorama', 100, 20000, QWEN25_FILE, 112, 19992],
  ])('%s: %ix%i', (_name, height, width, limits, expectedHeight, expectedWidth) => {
    expect(smartResize(height, width, limits)).toEqual({ height: expectedHeight, width: expectedWidth });
  });

  it('refuses an aspect ratio over 200 with transformers\' message, as a client error', () => {
    expect(() => smartResize(10, 2001, HF_DEFAULTS)).toThrow(ImageInputError);
    expect(() => smartResize(2001, 10, HF_DEFAULTS)).toThrow(/absolute aspect ratio must be smaller than 200, got 200\.1/);
  });

  it('keeps every result a multiple of the factor within the limits', () => {
    for (const [h, w] of [[333, 777], [29, 29], [1234, 567], [8000, 60]]) {
      const size = smartResize(h, w, HF_DEFAULTS);
      expect(size.height % 28).toBe(0);
      expect(size.width % 28).toBe(0);
      expect(size.height * size.width).toBeGreaterThanOrEqual(HF_DEFAULTS.minPixels);
      expect(size.height * size.width).toBeLessThanOrEqual(HF_DEFAULTS.maxPixels);
    }
  });
});

describe('roundHalfEven', () => {
  it.each([[0.5, 0], [1.5, 2], [2.5, 2], [-0.5, 0], [2.4999, 2], [2.5001, 3]])('%d -> %d', (x, expected) => {
    expect(roundHalfEven(x)).toBe(expected);
  });
});

describe('smartResizeLlamaCpp', () => {
  it.each([
    ['native size', 448, 448, 448, 448],
    ['no aspect-ratio error, sides at least the factor', 10, 2001, 28, 1988],
    ['halves round away from zero', 1080, 1920, 1092, 1932],
    ['too many pixels', 4000, 3000, 2044, 1540],
    ['a 1x1 image', 1, 1, 84, 84],
    ['grows to the minimum token count', 42, 70, 84, 112],
  ])('%s: %ix%i', (_name, height, width, expectedHeight, expectedWidth) => {
    expect(smartResizeLlamaCpp(height, width, LLAMA_CPP)).toEqual({ height: expectedHeight, width: expectedWidth });
  });
});
