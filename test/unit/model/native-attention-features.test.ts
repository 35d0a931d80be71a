/** @jest-environment ./test/helpers/ort-environment.js */
// The native attention kernel's sliding window, logit soft-cap and sinks against the float64
// reference of test/helpers/reference-attention.ts: every KV storage, every SIMD level this CPU
// runs, decodes and prefill tiles, GQA, windows shorter than the context that start inside blocks.
import { SIMD_LEVELS, type NativeKernels } from '../../../src/model/runner/native-kernels';
import { maxAbsDiff, NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';
import { KV_STORAGES, referenceAttention, scatteredSequences, seeded, seededCaches, useNativeAttention, type AttentionCase, type AttentionFeatures } from '../../helpers/reference-attention';

const gate = needs(NATIVE_ADDON);

gate.describe('native attention: sliding window, soft-cap, sinks', () => {
  const addon = useNativeAttention();
  let native: NativeKernels;
  beforeAll(() => (native = addon()));

  // Shapes whose plain calls take each fast path (attention.cc's attendSimd): head size 8 on
  // AVX-512 (four KV heads per vector decodes, queries-across-lanes prefill tiles) and on AVX2
  // (keys across lanes), the AVX-512 prefill kernel (GQA at multiples of 16), AVX512-BF16 decodes
  // (head size 32 / 64, one query head per KV head) and head size 12 (portable only).
  const cases: AttentionCase[] = [
    { heads: 16, kvHeads: 4, headDim: 8, blockSize: 5 },
    { heads: 4, kvHeads: 4, headDim: 8, blockSize: 16 },
    { heads: 8, kvHeads: 2, headDim: 64, blockSize: 16 },
    { heads: 4, kvHeads: 4, headDim: 64, blockSize: 7 },
    { heads: 2, kvHeads: 2, headDim: 32, blockSize: 16 },
    { heads: 6, kvHeads: 2, headDim: 12, blockSize: 5 },
  ];
  // A decode deep in the cache (several 256-key spans without a window), a fresh prefill and
  // chunks after some past (tiles whose rows start their windows at different keys), and more
  // sequences than 4 per thread (decodes that take every KV head of their sequence per item).
  const shapes = [
    { count: 1, past: 300 },
    { count: 23, past: 0 },
    { count: 9, past: 20 },
    { count: 4, past: 254 },
    { count: 45, past: 0 },
    { count: 37, past: 50 },
    ...[5, 16, 17, 40, 61, 90, 33, 9].map((past) => ({ count: 1, past })),
  ];
  const featureSets: Array<{ name: string; make: (heads: number) => AttentionFeatures }> = [
    { name: 'window 7', make: () => ({ window: 7 }) },
    { name: 'window 1', make: () => ({ window: 1 }) },
    { name: 'soft-cap 0.3', make: () => ({ softcap: 0.3 }) },
    { name: 'sinks', make: (heads) => ({ sinks: Float32Array.from(seeded(heads, 9), (x) => 3 * x) }) },
    { name: 'window 13, soft-cap 0.5 and sinks', make: (heads) => ({ window: 13, softcap: 0.5, sinks: Float32Array.from(seeded(heads, 4), (x) => 2 * x) }) },
  ];

  describe.each(cases)('$heads/$kvHeads heads, head size $headDim, blocks of $blockSize', (c) => {
    it.each(KV_STORAGES)('$name cache: every feature set and SIMD level matches the reference', (st) => {
      native.setThreads(2);
      const numBlocks = 96;
      const { k, v } = seededCaches(c, st, numBlocks);
      const { seqs, tables, rows } = scatteredSequences(shapes, c.blockSize, numBlocks);
      const q = seeded(rows * c.heads * c.headDim, 3);
      const [kd, vd] = [st.decode(k), st.decode(v)];
      const levels = new Set(SIMD_LEVELS.map((level) => native.setSimd(level)));
      const dims = Int32Array.from([c.heads, c.kvHeads, c.headDim, c.blockSize, st.code]);
      for (const set of featureSets) {
        const f = set.make(c.heads);
        const expected = referenceAttention(c, q, kd, vd, seqs, tables, f);
        for (const level of levels) {
          native.setSimd(level);
          const out = new Float32Array(q.length);
          native.attention(q, out, k, v, Int32Array.from(seqs), Int32Array.from(tables), dims, 1 / Math.sqrt(c.headDim), f.window ?? 0, f.softcap ?? 0, f.sinks ?? null);
          expect({ features: set.name, level, close: maxAbsDiff(out, expected) < 1e-5 }).toEqual({ features: set.name, level, close: true });
        }
      }
    });
  });

  it('changes the output: each feature on its own moves it away from the plain call', () => {
    const c = cases[2];
    const kvStride = c.kvHeads * c.headDim;
    const k = seeded(96 * c.blockSize * kvStride, 1);
    const v = seeded(96 * c.blockSize * kvStride, 2);
    const { seqs, tables, rows } = scatteredSequences(shapes, c.blockSize, 96);
    const q = seeded(rows * c.heads * c.headDim, 3);
    const run = (f: AttentionFeatures) => {
      const out = new Float32Array(q.length);
      native.attention(q, out, k, v, Int32Array.from(seqs), Int32Array.from(tables), Int32Array.from([c.heads, c.kvHeads, c.headDim, c.blockSize, 0]), 1 / Math.sqrt(c.headDim), f.window, f.softcap, f.sinks);
      return out;
    };
    const plain = run({});
    for (const f of featureSets.map((s) => s.make(c.heads))) expect(maxAbsDiff(run(f), plain)).toBeGreaterThan(1e-3);
    // A window longer than every context is no window.
    expect(maxAbsDiff(run({ window: 10_000 }), plain)).toBe(0);
  });

  it('never reads the blocks before a window (NaN there leaves the output finite and right)', () => {
    const c = { heads: 8, kvHeads: 2, headDim: 64, blockSize: 16 };
    const kvStride = c.kvHeads * c.headDim;
    const numBlocks = 80;
    const window = 40;
    // A decode at position 1000 and a chunk of 30 rows at 700..729: every block wholly before
    // the earliest row's window start points at block 0, filled with NaN.
    const shapesHere = [
      { count: 1, past: 1000 },
      { count: 30, past: 700 },
    ];
    const { seqs, tables, rows } = scatteredSequences(shapesHere, c.blockSize, numBlocks);
    for (let s = 0; s < shapesHere.length; s++) {
      const firstKey = Math.max(0, shapesHere[s].past - window + 1);
      for (let b = 0; (b + 1) * c.blockSize <= firstKey; b++) tables[seqs[4 * s + 3] + b] = 0;
    }
    const q = seeded(rows * c.heads * c.headDim, 3);
    for (const st of KV_STORAGES) {
      const kf = seeded(numBlocks * c.blockSize * kvStride, 1).fill(NaN, 0, c.blockSize * kvStride);
      const vf = seeded(numBlocks * c.blockSize * kvStride, 2).fill(NaN, 0, c.blockSize * kvStride);
      const [k, v] = [st.encode(kf), st.encode(vf)];
      const expected = referenceAttention(c, q, st.decode(k), st.decode(v), seqs, tables, { window });
      for (const level of new Set(SIMD_LEVELS.map((l) => native.setSimd(l)))) {
        native.setSimd(level);
        const out = new Float32Array(q.length);
        native.attention(q, out, k, v, Int32Array.from(seqs), Int32Array.from(tables), Int32Array.from([c.heads, c.kvHeads, c.headDim, c.blockSize, st.code]), 0.125, window);
        expect({ storage: st.name, level, finite: out.every(Number.isFinite), close: maxAbsDiff(out, expected) < 1e-5 }).toEqual({ storage: st.name, level, finite: true, close: true });
      }
    }
  });

  it('rejects a bad window, soft-cap or sinks with a clear error', () => {
    const k = new Float32Array(4 * 4 * 8);
    const q = new Float32Array(2 * 8);
    const call = (window?: number, softcap?: number, sinks?: unknown) => () =>
      native.attention(q, new Float32Array(q.length), k, k, Int32Array.from([0, 1, 0, 0]), Int32Array.from([0]), Int32Array.from([2, 1, 8, 4, 0]), 1, window, softcap, sinks as Float32Array);
    expect(call(-1)).toThrow(/window must be an integer >= 0/);
    expect(call(2.5)).toThrow(/window must be an integer >= 0/);
    expect(call(NaN)).toThrow(/window must be an integer >= 0/);
    expect(call(0, Infinity)).toThrow(/softcap must be a finite number >= 0/);
    expect(call(0, NaN)).toThrow(/softcap must be a finite number >= 0/);
    expect(call(0, -1)).toThrow(/softcap must be a finite number >= 0/);
    expect(call(0, 0, new Float32Array(3))).toThrow(/sinks must hold one value per query head/);
    expect(call(0, 0, new Float32Array(0))).toThrow(/sinks must hold one value per query head/);
    expect(call(0, 0, [0, 0])).toThrow(/sinks must be a Float32Array or null/);
    expect(call(0, 0, new Float64Array(2))).toThrow(/sinks must be a Float32Array or null/);
    expect(call(undefined, undefined, null)).not.toThrow();
    expect(call(3, 30, new Float32Array(2))).not.toThrow();
  });
});
