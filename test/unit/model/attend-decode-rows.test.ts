/** @jest-environment ./test/helpers/ort-environment.js */
// A verification step's rows (one-row entries of one sequence sharing its block table) are taken
// together by the kernel where each row's decode runs the SIMD item code with one query vector
// per KV head, so each span of K and V is read once for all of them. Each row must still be the
// very bits its own decode gives (speculative decoding's greedy output depends on it), at every
// kernel level, for every cache type, with soft-capping, sinks and a sliding window, and the
// result must be right (the float64 reference).
import { SIMD_LEVELS, type NativeKernels } from '../../../src/model/runner/native-kernels';
import { maxAbsDiff, NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';
import { KV_STORAGES, referenceAttention, scatteredSequences, seeded, seededCaches, useNativeAttention, type AttentionCase } from '../../helpers/reference-attention';

const gate = needs(NATIVE_ADDON);

/** The entries of sequences `verified` split into one-row entries at consecutive positions, as the runner sends a verification step. */
function rowByRow(seqs: number[], verified: Set<number>): number[] {
  const out: number[] = [];
  for (let s = 0; s < seqs.length / 4; s++) {
    const [first, count, past, table] = seqs.slice(4 * s, 4 * s + 4);
    if (!verified.has(s)) out.push(first, count, past, table);
    else for (let r = 0; r < count; r++) out.push(first + r, 1, past + r, table);
  }
  return out;
}

gate.describe('verification rows taken together by the attention kernel', () => {
  const addon = useNativeAttention();
  let native: NativeKernels;
  beforeAll(() => (native = addon()));

  // Multi-head shapes (the ones taken together) at head sizes 16-128, blocks that end inside
  // spans; a GQA shape and head size 8, which stay one row per item, must be unchanged too.
  const cases: AttentionCase[] = [
    { heads: 12, kvHeads: 12, headDim: 64, blockSize: 7 },
    { heads: 4, kvHeads: 4, headDim: 32, blockSize: 16 },
    { heads: 3, kvHeads: 3, headDim: 128, blockSize: 16 },
    { heads: 2, kvHeads: 2, headDim: 24, blockSize: 5 },
    { heads: 8, kvHeads: 2, headDim: 64, blockSize: 16 },
    { heads: 8, kvHeads: 8, headDim: 8, blockSize: 16 },
  ];
  // Five rows across the 256-key span, nine rows early, 33 rows (more than one item holds), a
  // plain decode and a prefill chunk beside them.
  const shapes = [
    { count: 5, past: 252 },
    { count: 1, past: 40 },
    { count: 9, past: 29 },
    { count: 33, past: 3 },
    { count: 6, past: 0 },
  ];
  const verified = new Set([0, 2, 3]);
  const features = [
    { name: 'plain' },
    { name: 'soft-capped, with sinks', softcap: 2, sinks: true },
    { name: 'a window of 40 (rows past it stay one per item)', window: 40 },
  ];

  describe.each(cases)('$heads/$kvHeads heads, head size $headDim, blocks of $blockSize', (c) => {
    it.each(KV_STORAGES.flatMap((st) => features.map((f) => ({ ...st, feature: f }))))('$name cache, $feature.name: each row is its decode, bit for bit', (st) => {
      const numBlocks = 160;
      const { k, v } = seededCaches(c, st, numBlocks, 8);
      const layout = scatteredSequences(shapes, c.blockSize, numBlocks);
      const seqs = rowByRow(layout.seqs, verified);
      const width = c.heads * c.headDim;
      // Scores of a trained model's size (a few units), where a kernel's rounding shows.
      const q = seeded(layout.rows * width, 9).map((x) => 4 * x);
      const dims = Int32Array.from([c.heads, c.kvHeads, c.headDim, c.blockSize, st.code]);
      const scale = 1 / Math.sqrt(c.headDim);
      const window = st.feature.window ?? 0;
      const softcap = st.feature.softcap ?? 0;
      const sinks = st.feature.sinks ? seeded(c.heads, 10) : null;
      const expected = referenceAttention(c, q, st.decode(k), st.decode(v), seqs, layout.tables, { window, softcap, sinks });
      for (const threads of [1, 2]) {
        native.setThreads(threads);
        for (const level of new Set(SIMD_LEVELS.map((l) => native.setSimd(l)))) {
          native.setSimd(level);
          const together = new Float32Array(q.length);
          native.attention(q, together, k, v, Int32Array.from(seqs), Int32Array.from(layout.tables), dims, scale, window, softcap, sinks);
          expect({ level, threads, close: maxAbsDiff(together, expected) < 1e-5 }).toEqual({ level, threads, close: true });
          for (let e = 0; e < seqs.length / 4; e++) {
            const [first, count] = seqs.slice(4 * e, 4 * e + 2);
            if (count !== 1) continue;
            const alone = new Float32Array(q.length);
            native.attention(q, alone, k, v, Int32Array.from(seqs.slice(4 * e, 4 * e + 4)), Int32Array.from(layout.tables), dims, scale, window, softcap, sinks);
            const rowOf = (a: Float32Array) => Array.from(a.subarray(first * width, (first + 1) * width));
            expect({ level, threads, row: first, out: rowOf(together) }).toEqual({ level, threads, row: first, out: rowOf(alone) });
          }
        }
      }
    });
  });
});
