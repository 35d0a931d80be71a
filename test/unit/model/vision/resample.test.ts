// PIL-compatible resampling against a float64 reference written here from Pillow's definition
// (a separable convolution, horizontal then vertical, kernel widened by the downscale factor,
// each pass rounded to uint8). The code under test quantises weights to 22-bit fixed point as
// Pillow does; the reference does not, so where a pass's exact value is a .5 tie (or comes from
// one) either rounding is right and ±1 level is allowed; every other pixel must be exact.
import { resizeRgb, type ResampleFilter } from '../../../../src/model/vision/resample';
import type { RgbImage } from '../../../../src/model/vision/rgb-image';
import { randomImage } from './random-image';

function referenceWeight(filter: ResampleFilter, x: number): number {
  const d = Math.abs(x);
  if (filter === 'bilinear') return Math.max(0, 1 - d);
  const a = -0.5;
  if (d < 1) return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1;
  if (d < 2) return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a;
  return 0;
}

/** A value this close to .5 may round either way once weights are quantised. */
const TIE = 1e-6;

interface Sample {
  value: number;
  /** This sample, or one it was computed from, sat on a rounding tie. */
  tie: boolean;
}

/** One axis: every input sample weighted by its distance to the output pixel's centre. */
function referenceAxis(samples: Sample[], outSize: number, filter: ResampleFilter): Sample[] {
  const scale = samples.length / outSize;
  const stretch = Math.max(1, scale);
  return Array.from({ length: outSize }, (_, i) => {
    const center = (i + 0.5) * scale;
    let sum = 0;
    let total = 0;
    let tie = false;
    samples.forEach((s, j) => {
      const w = referenceWeight(filter, (j + 0.5 - center) / stretch);
      sum += w * s.value;
      total += w;
      if (w !== 0 && s.tie) tie = true;
    });
    const exact = sum / total;
    tie ||= Math.abs(exact - Math.floor(exact) - 0.5) < TIE;
    return { value: Math.min(255, Math.max(0, Math.round(exact))), tie };
  });
}

function referenceResize(image: RgbImage, width: number, height: number, filter: ResampleFilter): Sample[] {
  let rows: Sample[] = Array.from(image.data, (value) => ({ value, tie: false }));
  if (width !== image.width) {
    const out = new Array<Sample>(width * image.height * 3);
    for (let y = 0; y < image.height; y++) {
      for (let c = 0; c < 3; c++) {
        const line = Array.from({ length: image.width }, (_, x) => rows[(y * image.width + x) * 3 + c]);
        referenceAxis(line, width, filter).forEach((v, x) => (out[(y * width + x) * 3 + c] = v));
      }
    }
    rows = out;
  }
  if (height === image.height) return rows;
  const out = new Array<Sample>(width * height * 3);
  for (let x = 0; x < width; x++) {
    for (let c = 0; c < 3; c++) {
      const column = Array.from({ length: image.height }, (_, y) => rows[(y * width + x) * 3 + c]);
      referenceAxis(column, height, filter).forEach((v, y) => (out[(y * width + x) * 3 + c] = v));
    }
  }
  return out;
}

const CASES: [string, number, number, number, number][] = [
  ['downscale', 64, 48, 23, 17],
  ['upscale', 13, 9, 40, 31],
  ['wider, shorter', 20, 30, 45, 12],
  ['one axis only', 30, 30, 30, 11],
  ['by an integer factor', 48, 48, 16, 24],
];

describe('resizeRgb (Pillow resampling)', () => {
  for (const filter of ['bilinear', 'bicubic'] as const) {
    for (const [name, w, h, outW, outH] of CASES) {
      it(`${filter}, ${name}: ${w}x${h} -> ${outW}x${outH} equals the float64 reference except at .5 ties`, () => {
        const image = randomImage(w, h, w * 1000 + h + outW);
        const got = resizeRgb(image, outW, outH, filter);
        const expected = referenceResize(image, outW, outH, filter);
        expect([got.width, got.height, got.data.length]).toEqual([outW, outH, expected.length]);
        let ties = 0;
        expected.forEach(({ value, tie }, i) => {
          if (tie) ties++;
          if (tie) expect(Math.abs(got.data[i] - value)).toBeLessThanOrEqual(1);
          else expect(got.data[i]).toBe(value);
        });
        // Ties are common only where scales are simple fractions: 42% of pixels for bilinear
        // 20x30 -> 45x12 (a tie in the first pass spreads in the second), 0-5% elsewhere.
        expect(ties / expected.length).toBeLessThan(0.5);
      });
    }
  }

  it('is the identity at the same size', () => {
    const image = randomImage(17, 9, 5);
    expect(resizeRgb(image, 17, 9, 'bicubic')).toBe(image);
  });

  it("halves two pixels into Pillow's rounded mean", () => {
    const image = { width: 2, height: 1, data: Uint8Array.from([0, 10, 255, 255, 11, 0]) };
    expect(Array.from(resizeRgb(image, 1, 1, 'bilinear').data)).toEqual([128, 11, 128]);
  });

  it('keeps a flat colour flat however it scales', () => {
    const flat = { width: 7, height: 5, data: new Uint8Array(7 * 5 * 3).fill(200) };
    for (const filter of ['bilinear', 'bicubic'] as const) {
      expect(resizeRgb(flat, 19, 3, filter).data.every((v) => v === 200)).toBe(true);
    }
  });

  it('clips bicubic overshoot at a step edge instead of wrapping around', () => {
    const edge = { width: 4, height: 1, data: Uint8Array.from([0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255]) };
    const red = Array.from(resizeRgb(edge, 16, 1, 'bicubic').data.filter((_, i) => i % 3 === 0));
    expect(red.every((v, i) => i === 0 || v >= red[i - 1])).toBe(true);
    expect([red[0], red[15]]).toEqual([0, 255]);
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => resizeRgb(randomImage(4, 4, 1), 0, 4, 'bilinear')).toThrow(/positive integers/);
    expect(() => resizeRgb(randomImage(4, 4, 1), 2.5, 4, 'bilinear')).toThrow(/positive integers/);
  });
});
