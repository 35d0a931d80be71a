/** @jest-environment ./test/helpers/ort-environment.js */
// The addon's residual add + RMSNorm (native/src/rms-norm.cc), which the Q8_0 path runs between
// its GEMMs instead of onnxruntime's (Skip)SimplifiedLayerNormalization, against a float64
// reference written here.
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import { maxRelDiff } from '../../../bench/kernel-timing';

const native = nativeKernels();
if (!native) console.warn('\n*** SKIPPING the addRmsNorm tests: the native addon is not built ***\n');
const addonDescribe = native ? describe : describe.skip;

function seeded(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

/** RMSNorm of each row of `rows` in float64. */
function reference(rows: ArrayLike<number>, weight: Float32Array, eps: number): Float64Array {
  const h = weight.length;
  const out = new Float64Array(rows.length);
  for (let r = 0; r < rows.length / h; r++) {
    let sum = 0;
    for (let j = 0; j < h; j++) sum += rows[r * h + j] ** 2;
    const inv = 1 / Math.sqrt(sum / h + eps);
    for (let j = 0; j < h; j++) out[r * h + j] = rows[r * h + j] * inv * weight[j];
  }
  return out;
}

addonDescribe('addRmsNorm (native/src/rms-norm.cc)', () => {
  // Widths: a multiple of the 16 partial sums, one with a tail, one below 16; rows of unequal scale.
  for (const [rows, h] of [
    [1, 768],
    [5, 37],
    [3, 7],
    [4, 2048],
  ] as const) {
    it(`${rows} x ${h}: without x, out = RMSNorm(residual) * weight and the residual is untouched`, () => {
      const residual = seeded(rows * h, rows * 31 + h, 3);
      const before = Float32Array.from(residual);
      const weight = seeded(h, h + 1, 2);
      const out = new Float32Array(rows * h).fill(NaN);
      native!.addRmsNorm(null, residual, weight, out, 1e-5);
      expect(residual).toEqual(before);
      expect(maxRelDiff(out, reference(residual, weight, 1e-5))).toBeLessThan(1e-6);
    });

    it(`${rows} x ${h}: with x, the residual becomes residual + x (float32) and out its norm`, () => {
      const residual = seeded(rows * h, rows * 17 + h, 2);
      const x = seeded(rows * h, rows * 19 + h, 5);
      const sum = residual.map((r, i) => Math.fround(r + x[i]));
      const weight = seeded(h, h + 3);
      const out = new Float32Array(rows * h);
      native!.addRmsNorm(x, residual, weight, out, 1e-6);
      expect(residual).toEqual(sum);
      expect(maxRelDiff(out, reference(sum, weight, 1e-6))).toBeLessThan(1e-6);
    });
  }

  it('eps counts: an all-zero row gives zeros, a tiny row is damped by eps', () => {
    const h = 32;
    const weight = new Float32Array(h).fill(1);
    const residual = new Float32Array(2 * h);
    residual.fill(1e-4, h);
    const out = new Float32Array(2 * h).fill(NaN);
    native!.addRmsNorm(null, residual, weight, out, 1e-5);
    expect(Array.from(out.subarray(0, h)).every((v) => v === 0)).toBe(true);
    expect(out[h]).toBeCloseTo(1e-4 / Math.sqrt(1e-8 + 1e-5), 5);
  });

  it('rejects mismatched lengths, overlapping arrays and a non-array x', () => {
    const weight = new Float32Array(16).fill(1);
    const residual = new Float32Array(32);
    expect(() => native!.addRmsNorm(null, residual, weight, new Float32Array(16), 1e-5)).toThrow(/rows of weight's width/);
    expect(() => native!.addRmsNorm(new Float32Array(16), residual, weight, new Float32Array(32), 1e-5)).toThrow(/rows of weight's width/);
    expect(() => native!.addRmsNorm(null, new Float32Array(24), weight, new Float32Array(24), 1e-5)).toThrow(/rows of weight's width/);
    expect(() => native!.addRmsNorm(null, residual, weight, residual, 1e-5)).toThrow(/must not overlap/);
    const shared = new Float32Array(64);
    expect(() => native!.addRmsNorm(shared.subarray(16, 48), shared.subarray(0, 32), weight, new Float32Array(32), 1e-5)).toThrow(/must not overlap/);
    expect(() => native!.addRmsNorm([1, 2] as unknown as Float32Array, residual, weight, new Float32Array(32), 1e-5)).toThrow(/Float32Array or null/);
  });
});
