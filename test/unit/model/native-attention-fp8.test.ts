/** @jest-environment ./test/helpers/ort-environment.js */
// The 8-bit KV caches (--kv-cache-dtype fp8 = fp8_e4m3, fp8_e5m2): the test's own fp8 codec on
// the formats' edge values, every code read back exactly by every SIMD level of the kernel, and
// stories260K decoding with an fp8 cache close to float32. (The kernel against the float64
// reference on every shape and the writeKv rounding of every kind of value are in
// native-attention.test.ts, with the other storage types.)
import { loadModel } from '../../../src/model/load-model';
import { createRunner, resolveKvCacheDtype } from '../../../src/model/runner';
import { nativeKernels, SIMD_LEVELS, type NativeKernels } from '../../../src/model/runner/native-kernels';
import type { KvStorageDtype } from '../../../src/model/runner/kv-dtype';
import type { LoadedModel, StepSequence } from '../../../src/model/types';
import { FP8_FORMATS } from '../../helpers/fp8';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { argmax, BlockAllocator, NATIVE_ADDON } from '../../helpers/runner-driver';

const [E4M3, E5M2] = FP8_FORMATS;

describe("the tests' fp8 codec", () => {
  it('decodes the edge values of E4M3FN (bias 7, no infinities) and E5M2 (bias 15)', () => {
    expect([0x00, 0x01, 0x07, 0x08, 0x38, 0x7e, 0xfe, 0x80].map(E4M3.decode)).toEqual([0, 2 ** -9, 7 * 2 ** -9, 2 ** -6, 1, 448, -448, -0]);
    expect(E4M3.decode(0x7f)).toBeNaN();
    expect(E4M3.decode(0xff)).toBeNaN();
    expect([0x00, 0x01, 0x03, 0x04, 0x3c, 0x7b, 0x7c, 0xfc].map(E5M2.decode)).toEqual([0, 2 ** -16, 3 * 2 ** -16, 2 ** -14, 1, 57344, Infinity, -Infinity]);
    expect([0x7d, 0x7e, 0x7f].map(E5M2.decode).every(Number.isNaN)).toBe(true);
  });

  it('encodes to nearest even, saturates past the largest finite value (infinities too) and keeps NaN', () => {
    // Subnormal ties (half the smallest step goes to 0, 1.5 steps to the even 2), a tie between
    // normals (1 + 1/16 -> 1), saturation (464 is the midpoint to the 480 E4M3 lacks), -0.
    expect([2 ** -10, 3 * 2 ** -10, 1 + 1 / 16, 1 + 3 / 16, 448, 464, 1e6, Infinity, -Infinity, -0, 2 ** -6 - 2 ** -11].map(E4M3.encode)).toEqual([
      0x00, 0x02, 0x38, 0x3a, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0x80, 0x08,
    ]);
    expect([2 ** -17, 3 * 2 ** -17, 1 + 1 / 8, 57344, 61440, 65504, Infinity, -1e9].map(E5M2.encode)).toEqual([0x00, 0x02, 0x3c, 0x7b, 0x7b, 0x7b, 0x7b, 0xfb]);
    expect(E4M3.encode(NaN)).toBe(0x7f);
    expect(E5M2.encode(NaN)).toBe(0x7f);
    // Every finite code survives the round trip.
    for (const f of FP8_FORMATS) {
      for (let b = 0; b < 256; b++) if (Number.isFinite(f.decode(b))) expect({ f: f.name, b, back: f.encode(f.decode(b)) }).toEqual({ f: f.name, b, back: b });
    }
  });
});

const gate = needs(NATIVE_ADDON);

gate.describe('native attention over 8-bit caches', () => {
  let native: NativeKernels;
  beforeAll(() => {
    native = nativeKernels()!;
    native.setThreads(1);
  });
  afterAll(() => {
    native.setSimd('avx512bf16');
  });
  const levels = () => [...new Set(SIMD_LEVELS.map((l) => native.setSimd(l)))];

  // One key: the output is its V row exactly (weight 1). Four heads of 64 columns hold all 256
  // codes, so every code goes through each level's widening (AVX-512's 16-column passes at head
  // size 64), NaN and E5M2's infinities included.
  it.each(FP8_FORMATS)('$name: every code reads back as its value on every SIMD level', (f) => {
    const heads = 4;
    const headDim = 64;
    const v = Uint8Array.from({ length: 16 * heads * headDim }, (_, i) => i & 0xff);
    const k = new Uint8Array(v.length);
    const q = new Float32Array(heads * headDim).fill(0.25);
    const expected = Array.from({ length: 256 }, (_, b) => f.decode(b) + 0); // -0 comes out as 0 (0 + 1 * -0)
    for (const level of levels()) {
      native.setSimd(level);
      const out = new Float32Array(q.length);
      native.attention(q, out, k, v, Int32Array.from([0, 1, 0, 0]), Int32Array.from([0]), Int32Array.from([heads, heads, headDim, 16, f.code]), 0.125);
      expect({ level, out: Array.from(out) }).toEqual({ level, out: expected });
    }
  });

  // The same at head size 8 in a decode batch (eight sequences of one key, 4 KV heads of 2 query
  // heads each: on avx512bf16 the four-heads-per-vector kernel, whose table lookup turns each
  // code into its bfloat16 value). Sequence s's row holds codes 32s .. 32s + 31.
  it.each(FP8_FORMATS)('$name: every code reads back as its value at head size 8, four KV heads per vector', (f) => {
    const [heads, kvHeads, headDim, seqs] = [8, 4, 8, 8];
    const v = Uint8Array.from({ length: seqs * kvHeads * headDim }, (_, i) => i & 0xff); // blocks of one row: row s holds codes 32s ..
    const k = new Uint8Array(v.length);
    const q = new Float32Array(seqs * heads * headDim).fill(0.25);
    const info = Int32Array.from({ length: 4 * seqs }, (_, i) => [i >> 2, 1, 0, i >> 2][i & 3]);
    const tables = Int32Array.from({ length: seqs }, (_, s) => s);
    const expected = Array.from({ length: seqs * heads * headDim }, (_, i) => {
      const [s, head, d] = [Math.floor(i / (heads * headDim)), Math.floor(i / headDim) % heads, i % headDim];
      return f.decode((32 * s + Math.floor(head / 2) * headDim + d) & 0xff) + 0;
    });
    for (const level of levels()) {
      native.setSimd(level);
      const out = new Float32Array(q.length);
      native.attention(q, out, k, v, info, tables, Int32Array.from([heads, kvHeads, headDim, 1, f.code]), 0.125);
      expect({ level, out: Array.from(out) }).toEqual({ level, out: expected });
    }
  });

  it('refuses an 8-bit type code with a 16-bit cache array and the reverse', () => {
    const q = new Float32Array(8);
    const call = (cache: Uint8Array | Uint16Array, code: number) => () =>
      native.attention(q, new Float32Array(8), cache, cache, Int32Array.from([0, 1, 0, 0]), Int32Array.from([0]), Int32Array.from([1, 1, 8, 4, code]), 1);
    expect(call(new Uint16Array(32), 3)).toThrow(/kvType does not match/);
    expect(call(new Uint8Array(32), 1)).toThrow(/kvType does not match/);
    expect(() => native.writeKv(q, q, new Uint8Array(32), new Uint8Array(32), Int32Array.from([0]), 2)).toThrow(/kvType does not match/);
  });
});

const STORIES = sharedModel('stories260K.gguf');

needs(STORIES, NATIVE_ADDON).describe('stories260K with an 8-bit KV cache', () => {
  let model: LoadedModel;
  beforeAll(async () => {
    model = await loadModel(loadOptions(STORIES));
  });

  it("--kv-cache-dtype fp8 stores fp8_e4m3 (vLLM's fp8)", () => {
    expect(resolveKvCacheDtype(model, 'fp8')).toBe('fp8_e4m3');
  });

  const PROMPTS = [
    [1, 403, 407, 261, 318],
    [1, 338, 62],
    [1, 88, 70, 440, 25, 300, 8, 9, 400],
  ];
  const STEPS = 48;

  /**
   * The logits of every step when each prompt is continued by `forced` (the float32 run's greedy
   * tokens), or greedily when absent: teacher forcing, so a storage type's error at one step does
   * not change the tokens later steps see.
   */
  async function decode(kvCacheDtype: KvStorageDtype, forced?: number[][]): Promise<{ tokens: number[][]; logits: Float32Array[][] }> {
    const runner = await createRunner(model, { blockSize: 16, numBlocks: 32, device: 'cpu', intraOpThreads: 1, attention: 'native', kvCacheDtype });
    try {
      const vocab = model.config.vocabSize;
      const alloc = new BlockAllocator(runner);
      const tables = PROMPTS.map((p) => alloc.table(p.length + STEPS));
      const seqs = PROMPTS.map((p) => [...p]);
      const logits: Float32Array[][] = PROMPTS.map(() => []);
      let batch: StepSequence[] = PROMPTS.map((p, i) => ({ tokens: p, positionOffset: 0, blockTable: tables[i] }));
      for (let s = 0; s < STEPS; s++) {
        const r = await runner.step(batch);
        batch = seqs.map((seq, i) => {
          const row = r.logits.slice(i * vocab, (i + 1) * vocab);
          logits[i].push(row);
          seq.push(forced ? forced[i][seq.length] : argmax(row));
          return { tokens: [seq[seq.length - 1]], positionOffset: seq.length - 1, blockTable: tables[i] };
        });
      }
      return { tokens: seqs, logits };
    } finally {
      await runner.dispose();
    }
  }

  /** Mean |logit difference| against float32 and the share of steps whose argmax is float32's. */
  function compare(a: Float32Array[][], reference: Float32Array[][]): { meanAbs: number; sameArgmax: number } {
    let sum = 0;
    let count = 0;
    let same = 0;
    let steps = 0;
    a.forEach((rows, i) =>
      rows.forEach((row, s) => {
        const ref = reference[i][s];
        for (let j = 0; j < row.length; j++) sum += Math.abs(row[j] - ref[j]);
        count += row.length;
        steps++;
        if (argmax(row) === argmax(ref)) same++;
      }),
    );
    return { meanAbs: sum / count, sameArgmax: same / steps };
  }

  // Tolerances. E4M3 keeps 3 mantissa bits (a relative rounding error up to 2^-4), E5M2 2 (2^-3);
  // stories260K's head size 8 leaves a score no dot-product terms to average that error over, and
  // its keys reach |30| (scores move by up to ~1 before a sharp softmax), so fp8 moves its logits
  // far more than half precision does. Measured on this model (48 teacher-forced steps of these 3
  // prompts, logits spanning ~38): mean |dlogit| float16 0.002, e4m3 0.26, e5m2 0.47 (on other
  // prompts max 4.2 and 8.5), argmax equal to float32's at 90% / 91% of steps (greedy decoding
  // itself parts from float32's at a near tie within 1 to 16 tokens, so it is not compared). The
  // bounds sit about 1.5x above those and keep the ordering the formats' precision implies: a
  // decoding error (a missed 2^8 factor, a shifted field) moves every logit by whole units.
  it('keeps the logits close to float32 (teacher-forced), E4M3 closer than E5M2, both further than float16', async () => {
    const reference = await decode('float32');
    const results: Record<string, { meanAbs: number; sameArgmax: number }> = {};
    for (const dtype of ['float16', 'fp8_e4m3', 'fp8_e5m2'] as const) results[dtype] = compare((await decode(dtype, reference.tokens)).logits, reference.logits);
    expect(results.float16.meanAbs).toBeLessThan(0.01);
    expect(results.fp8_e4m3.meanAbs).toBeLessThan(0.4);
    expect(results.fp8_e5m2.meanAbs).toBeLessThan(0.8);
    expect(results.fp8_e4m3.sameArgmax).toBeGreaterThanOrEqual(0.8);
    expect(results.fp8_e5m2.sameArgmax).toBeGreaterThanOrEqual(0.8);
    expect(results.fp8_e4m3.meanAbs).toBeLessThan(results.fp8_e5m2.meanAbs);
    expect(results.float16.meanAbs).toBeLessThan(results.fp8_e4m3.meanAbs / 10);
  });
});
