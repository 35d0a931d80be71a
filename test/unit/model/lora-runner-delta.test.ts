// The native backends' LoRA products (runner/backends/lora-delta.ts): ortllm_native's loraAdd in
// each SIMD build and the plain loops against a float64 reference, over a pass whose slots' rows
// are interleaved or contiguous, with base rows left alone and an output laid out as the second
// half of a fused [rows, 2 * out] buffer; and loraAdd's rows independent of the batch around them.
import { llamaConfig } from '../../../bench/random-llama';
import { randomAdapter } from '../../../bench/random-lora';
import type { LoraPair } from '../../../src/model/lora/lora-weights';
import { LoraDeltas, loraPackedB } from '../../../src/model/runner/backends/lora-delta';
import { nativeKernels, type NativeKernels } from '../../../src/model/runner/native-kernels';
import { maxAbsDiff } from '../../helpers/runner-driver';

const config = llamaConfig({ intermediateSize: 96 });
const adapters = [randomAdapter(config, 16, 8, 21), randomAdapter(config, 8, 32, 22)];
const h = config.hiddenSize;
const inter = 96;

/** `y0` with each adapter row's up_proj product added in float64, in the up half of each row. */
function reference(x: Float32Array, y0: Float32Array, rowSlot: Int32Array): Float32Array {
  const y = Float64Array.from(y0);
  rowSlot.forEach((slot, row) => {
    if (slot < 0) return;
    const pair = adapters[slot].layers[1].get('up_proj')!;
    addReference(pair, x, y, row, 2 * inter, inter);
  });
  return Float32Array.from(y);
}

/** y[row * stride + offset + j] += ((x_row Aᵀ) Bᵀ)_j in float64. */
function addReference(pair: LoraPair, x: Float32Array, y: Float64Array, row: number, stride: number, offset: number): void {
  const { rank, inFeatures: k, outFeatures: n } = pair;
  const t = Array.from({ length: rank }, (_, r) => {
    let sum = 0;
    for (let i = 0; i < k; i++) sum += x[row * k + i] * pair.a[r * k + i];
    return sum;
  });
  for (let j = 0; j < n; j++) {
    let sum = 0;
    for (let r = 0; r < rank; r++) sum += t[r] * pair.b[j * rank + r];
    y[row * stride + offset + j] += sum;
  }
}

/** A random pair (B scaled), seeded. */
function randomPair(rank: number, inFeatures: number, outFeatures: number, seed: number): LoraPair {
  const v = (i: number) => Math.sin(i * 0.731 + seed * 1.37) * 0.5;
  return {
    rank,
    inFeatures,
    outFeatures,
    a: Float32Array.from({ length: rank * inFeatures }, (_, i) => v(i) / Math.sqrt(inFeatures)),
    b: Float32Array.from({ length: outFeatures * rank }, (_, i) => v(i + 7919) * 0.25),
  };
}

const native = nativeKernels();
const builds = (['portable', 'avx2', 'avx512'] as const).filter((b) => native?.loraAdd && (b === 'portable' || native.setSimd(b) === b));
native?.setSimd('avx512bf16');
if (!native?.loraAdd) console.warn('\n*** SKIPPING the loraAdd cases: ortllm_native is not built (or predates it) ***\n');

const backends: Array<[string, NativeKernels | null]> = [['plain loops', null]];
if (native?.loraAdd) backends.push(['ortllm_native', native]);

describe.each(backends)('LoRA products with %s', (_, kernels) => {
  const cases: Array<[string, number[]]> = [
    ['interleaved', [0, -1, 1, 0, 1, -1, 0]],
    ['contiguous', [0, 0, 0, 1, 1, -1, -1]],
  ];
  it.each(cases)('adds each slot\'s product to its rows only (%s rows), in the output\'s layout', (__, slots) => {
    const rowSlot = Int32Array.from(slots);
    const rows = rowSlot.length;
    const x = Float32Array.from({ length: rows * h }, (_, i) => Math.sin(i * 0.37));
    const y0 = Float32Array.from({ length: rows * 2 * inter }, (_, i) => Math.cos(i * 0.11));
    const y = y0.slice();
    new LoraDeltas({ slots: [adapters[0], adapters[1], null], rowSlot }, kernels).add(1, 'up_proj', x, y, { stride: 2 * inter, offset: inter });
    expect(maxAbsDiff(y, reference(x, y0, rowSlot))).toBeLessThan(1e-5);
    // Base rows and every gate half are untouched.
    for (let row = 0; row < rows; row++) {
      const gate = y.subarray(row * 2 * inter, row * 2 * inter + inter);
      expect(gate).toEqual(y0.subarray(row * 2 * inter, row * 2 * inter + inter));
      if (rowSlot[row] < 0) expect(y.subarray(row * 2 * inter, (row + 1) * 2 * inter)).toEqual(y0.subarray(row * 2 * inter, (row + 1) * 2 * inter));
    }
  });

  it('leaves the rows of a slot whose adapter lacks the module alone, beside one that has it', () => {
    const withoutUp = { ...adapters[1], layers: adapters[1].layers.map((layer) => new Map([...layer].filter(([module]) => module !== 'up_proj'))) };
    const rowSlot = Int32Array.from([1, 0, 1, 0, -1, 1]);
    const rows = rowSlot.length;
    const x = Float32Array.from({ length: rows * h }, (_, i) => Math.sin(i * 0.23));
    const y0 = Float32Array.from({ length: rows * 2 * inter }, (_, i) => Math.cos(i * 0.19));
    const y = y0.slice();
    new LoraDeltas({ slots: [adapters[0], withoutUp], rowSlot }, kernels).add(1, 'up_proj', x, y, { stride: 2 * inter, offset: inter });
    expect(maxAbsDiff(y, reference(x, y0, Int32Array.from(rowSlot, (slot) => (slot === 0 ? 0 : -1))))).toBeLessThan(1e-5);
  });

  it('refuses a row naming an empty slot', () => {
    expect(() => new LoraDeltas({ slots: [adapters[0], null], rowSlot: Int32Array.from([0, 1]) }, kernels)).toThrow(/slot 1, which holds no adapter/);
  });
});

(native?.loraAdd ? describe : describe.skip)('loraAdd', () => {
  const n = native!;
  afterAll(() => n.setThreads(1));

  // [rank, in, out, rows, stride extra, offset, threads]: in and out off multiples of 16 (tails), ranks off multiples of 4.
  const shapes: Array<[number, number, number, number[], number, number, number]> = [
    [16, 64, 96, [0, 2, 5], 0, 0, 1],
    [8, 200, 150, [1, 3, 4, 6], 40, 17, 1],
    [16, 200, 150, [0, 1, 2, 3, 4, 5, 6, 7], 8, 3, 2],
    [3, 37, 21, [2, 0], 5, 5, 1],
    [16, 256, 700, Array.from({ length: 48 }, (_, i) => (i * 7) % 48), 0, 0, 2],
  ];
  for (const simd of builds)
    it.each(shapes)(`${simd}: rank %i, in %i, out %i against float64, with stride and offset`, (rank, inF, outF, rows, extra, offset, threads) => {
      n.setThreads(threads);
      const pair = randomPair(rank, inF, outF, rank + inF);
      const m = Math.max(...rows) + 1;
      const stride = offset + outF + extra;
      const x = Float32Array.from({ length: m * inF }, (_, i) => Math.cos(i * 0.29));
      const y0 = Float32Array.from({ length: m * stride }, (_, i) => Math.sin(i * 0.13));
      const y = y0.slice();
      n.loraAdd!(pair.a, loraPackedB(pair), x, y, Int32Array.from(rows), Int32Array.from([inF, outF, rank, stride, offset]), simd);
      const want = Float64Array.from(y0);
      for (const row of rows) addReference(pair, x, want, row, stride, offset);
      expect(maxAbsDiff(y, Float32Array.from(want))).toBeLessThan(2e-5);
      // Columns outside [offset, offset + out) and rows not named are untouched.
      for (let row = 0; row < m; row++)
        for (let j = 0; j < stride; j++)
          if (!rows.includes(row) || j < offset || j >= offset + outF) expect(y[row * stride + j]).toBe(y0[row * stride + j]);
    });

  it.each(builds)('%s: a row\'s result has the same bits alone as in a large batch on two threads', (simd) => {
    const pair = randomPair(16, 256, 700, 5);
    const bp = loraPackedB(pair);
    const m = 48;
    const x = Float32Array.from({ length: m * 256 }, (_, i) => Math.cos(i * 0.41));
    const dims = Int32Array.from([256, 700, 16, 700, 0]);
    n.setThreads(2);
    const batch = new Float32Array(m * 700);
    n.loraAdd!(pair.a, bp, x, batch, Int32Array.from({ length: m }, (_, i) => i), dims, simd);
    n.setThreads(1);
    for (const row of [0, 17, 47]) {
      const alone = new Float32Array(m * 700);
      n.loraAdd!(pair.a, bp, x, alone, Int32Array.from([row]), dims, simd);
      expect(alone.subarray(row * 700, (row + 1) * 700)).toEqual(batch.subarray(row * 700, (row + 1) * 700));
    }
  });

  // A pass's slots of one linear in one call: each slot's rows get the bits loraAdd gives them
  // slot by slot (ranks of 16, 8 and 3, rows interleaved, on one and two threads).
  it.each(builds.flatMap((simd) => [1, 2].map((threads) => [simd, threads] as const)))('%s, %i thread(s): loraAddSlots equals loraAdd slot by slot, bit for bit', (simd, threads) => {
    n.setThreads(threads);
    const [inF, outF, stride, offset] = [200, 150, 170, 11];
    const pairs = [randomPair(16, inF, outF, 41), randomPair(8, inF, outF, 42), randomPair(3, inF, outF, 43)];
    const slotRows = [[0, 3, 6, 9, 12, 15, 18, 21, 24], [1, 4, 7], [2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 30]];
    const m = 31;
    const x = Float32Array.from({ length: m * inF }, (_, i) => Math.cos(i * 0.31));
    const y0 = Float32Array.from({ length: m * stride }, (_, i) => Math.sin(i * 0.17));
    const slotBySlot = y0.slice();
    pairs.forEach((pair, s) => n.loraAdd!(pair.a, loraPackedB(pair), x, slotBySlot, Int32Array.from(slotRows[s]), Int32Array.from([inF, outF, pair.rank, stride, offset]), simd));
    const together = y0.slice();
    const dims = Int32Array.from([inF, outF, stride, offset, ...pairs.flatMap((pair, s) => [pair.rank, slotRows[s].length])]);
    n.loraAddSlots!(pairs.map((pair) => pair.a), pairs.map(loraPackedB), x, together, Int32Array.from(slotRows.flat()), dims, simd);
    expect(Array.from(together)).toEqual(Array.from(slotBySlot));
  });

  it('loraAddSlots throws on arrays of other lengths, row counts that do not add up and a bad pair', () => {
    const pair = randomPair(8, 64, 100, 1);
    const bp = loraPackedB(pair);
    const x = new Float32Array(4 * 64);
    const y = new Float32Array(4 * 100);
    const dims = (...slots: number[]) => Int32Array.from([64, 100, 100, 0, ...slots]);
    expect(() => n.loraAddSlots!([pair.a], [], x, y, Int32Array.from([0]), dims(8, 1))).toThrow(/as many Float32Arrays/);
    expect(() => n.loraAddSlots!([pair.a], [bp], x, y, Int32Array.from([0, 1]), dims(8, 1))).toThrow(/add up to rows.length/);
    expect(() => n.loraAddSlots!([pair.a], [bp], x, y, Int32Array.from([0]), dims(8, 2))).toThrow(/within rows/);
    expect(() => n.loraAddSlots!([bp], [pair.a], x, y, Int32Array.from([0]), dims(8, 1))).toThrow(/rank \* in and each bp/);
    expect(() => n.loraAddSlots!([pair.a], [bp], x, y, Int32Array.from([5]), dims(8, 1))).toThrow(/a row is outside x or y/);
  });

  it('throws on a row outside x or y, an output past its row, arrays of other shapes and an unknown build', () => {
    const pair = randomPair(8, 64, 100, 1);
    const bp = loraPackedB(pair);
    const x = new Float32Array(4 * 64);
    const y = new Float32Array(4 * 128);
    const dims = (stride: number, offset: number) => Int32Array.from([64, 100, 8, stride, offset]);
    expect(() => n.loraAdd!(pair.a, bp, x, y, Int32Array.from([4]), dims(128, 0))).toThrow(/a row is outside x or y/);
    expect(() => n.loraAdd!(pair.a, bp, x, y, Int32Array.from([0]), dims(100, 1))).toThrow(/yStride >= yOffset \+ out/);
    expect(() => n.loraAdd!(bp, pair.a, x, y, Int32Array.from([0]), dims(128, 0))).toThrow(/rank \* in and bp of rank \* out rounded up/);
    expect(() => n.loraAdd!(pair.a, bp, x, y, Int32Array.from([0]), dims(128, 0), 'sse' as never)).toThrow(/expected/);
  });
});
