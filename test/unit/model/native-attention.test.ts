/** @jest-environment ./test/helpers/ort-environment.js */
// The native paged-attention kernel against the float64 reference of test/helpers, and the
// segmented runner built on it: both attention paths give the same greedy tokens, a sequence's
// logits do not depend on what else is in its batch, and a bfloat16 cache stays close to float32.
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import { SIMD_LEVELS, type NativeKernels } from '../../../src/model/runner/native-kernels';
import { WeightMap } from '../../../src/model/weight-map';
import type { ModelRunner, StepSequence } from '../../../src/model/types';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';
import { KV_STORAGES, referenceAttention, scatteredSequences, seeded, seededCaches, useNativeAttention, type AttentionCase as Case } from '../../helpers/reference-attention';

const gate = needs(NATIVE_ADDON);

gate.describe('native paged attention kernel', () => {
  const addon = useNativeAttention();
  let native: NativeKernels;
  beforeAll(() => (native = addon()));

  // Each case runs on every kernel the CPU has (setSimd: portable, AVX2, AVX-512, AVX512-BF16). hd 8, 24, 32, 64
  // and 128 take the SIMD kernels (hd 64 also AVX-512's 512-bit passes), hd 12 only the portable one; 8 query heads on 4 or 2 KV
  // heads, 32 on 4 (a wide GQA group), plain multi-head. The V pass splits a head's columns into
  // passes of 8, 4, 2 and 1 eight-float vectors by the number of query vectors: hd 24 (3 vectors)
  // and 128 (16) take the remainders and repeats that 64 does not. Decodes prefetch in spans of
  // about 16 KB of K rows (16 to 256 keys by the bytes an item reads per row): 12 heads of 64 in
  // blocks of 7 take 16-key spans of 16-bit rows that start and end inside blocks. Head size 8
  // with 2 or 3 query heads per KV head scores decodes with keys across lanes on AVX2 (8 keys per
  // vector); on AVX-512 hd 8 with 4 or 8 KV heads in a decode batch takes four KV heads per float32
  // vector pair (attend-hd8.inc, every type but E4M3 on AVX512-BF16).
  // AVX512-BF16 (bfloat16 and 8-bit caches, decodes): hd 32 and 64 with one query head per KV head
  // score with bfloat16 dot products (bfloat16, E4M3); hd 8 E4M3 with 4 or 8 KV heads in a decode
  // batch (the hd-8 shapes) takes four KV heads per bfloat16 vector; spans end inside a group of four
  // keys (38, 301 keys) and cross blocks of 3, 4 and 16 rows. Their query rows are split into three
  // bfloat16 terms, so the same 1e-5 holds (one term, q rounded to bfloat16, fails it).
  // Prefill tiles (several query rows) at head sizes 32, 64 and 128 take AVX-512's prefill kernel
  // (attend-prefill.inc) at levels avx512 and avx512bf16: one or two vectors of 16 queries (8-row
  // GQA tiles of 2 heads, 4-row tiles of 8), the causal mask on the diagonal and the last block's padding.
  // GQA decodes (one query row, several query heads per KV head) at those head sizes take it too.
  const cases: Case[] = [
    { heads: 8, kvHeads: 4, headDim: 8, blockSize: 4 },
    { heads: 6, kvHeads: 2, headDim: 12, blockSize: 5 },
    { heads: 4, kvHeads: 4, headDim: 64, blockSize: 16 },
    { heads: 2, kvHeads: 2, headDim: 32, blockSize: 16 },
    { heads: 32, kvHeads: 4, headDim: 64, blockSize: 16 },
    { heads: 6, kvHeads: 6, headDim: 24, blockSize: 16 },
    { heads: 4, kvHeads: 2, headDim: 128, blockSize: 16 },
    { heads: 12, kvHeads: 12, headDim: 64, blockSize: 7 },
    { heads: 16, kvHeads: 8, headDim: 8, blockSize: 16 },
    { heads: 12, kvHeads: 4, headDim: 8, blockSize: 3 },
    // GQA decodes at head sizes of multiples of 16 take the prefill kernel too (a query vector per
    // group head; groups of up to 4 and 8 hold 4 and 2 dimensions of each query per vector): groups
    // of 2, 4, 8 and 16, in blocks that end inside its 64-key blocks.
    { heads: 8, kvHeads: 4, headDim: 64, blockSize: 5 },
    { heads: 8, kvHeads: 2, headDim: 64, blockSize: 16 },
    { heads: 16, kvHeads: 2, headDim: 32, blockSize: 7 },
    { heads: 16, kvHeads: 1, headDim: 48, blockSize: 16 },
    // More KV heads than a wide batch's GQA decode item holds (8): items of 8 and 4 heads.
    { heads: 24, kvHeads: 12, headDim: 32, blockSize: 9 },
    // Head size 8 on AVX-512 (attend-hd8.inc): decodes of KV heads in fours, one query head per KV
    // head (group 1) and groups of 2 and 3 above; a group of 4 (its decodes one KV head per item, the
    // AVX2 item code) and 2 KV heads (not a multiple of four). Prefill tiles of every group take
    // the queries-across-lanes kernel: one vector of up to 16 query vectors or two of up to 32.
    { heads: 4, kvHeads: 4, headDim: 8, blockSize: 16 },
    { heads: 16, kvHeads: 4, headDim: 8, blockSize: 5 },
    { heads: 8, kvHeads: 2, headDim: 8, blockSize: 16 },
  ];
  const storages = KV_STORAGES;

  describe.each(cases)('$heads/$kvHeads heads, head size $headDim, blocks of $blockSize', (c) => {
    it.each(storages.flatMap((st) => [1, 2].map((threads) => ({ ...st, threads }))))('$name cache, $threads thread(s): matches the reference', (st) => {
      native.setThreads(st.threads);
      const numBlocks = 48;
      const kvStride = c.kvHeads * c.headDim;
      const k = st.encode(seeded(numBlocks * c.blockSize * kvStride, 1));
      const v = st.encode(seeded(numBlocks * c.blockSize * kvStride, 2));
      // A decode with a long past, a fresh prefill, a chunk after some past, in scattered blocks;
      // and a decode and a chunk deeper than the SIMD kernel's 256-key span (several spans, the
      // last one partial, across block boundaries).
      const shapes = [
        { count: 1, past: 37 },
        { count: 23, past: 0 },
        { count: 9, past: 20 },
        { count: 1, past: 300 },
        { count: 4, past: 254 },
        // Prefill chunks of several tiles (AVX-512's prefill kernel, tiles of up to 32 query
        // vectors, keys in blocks of 64): a tile's diagonal inside a later key block, after some past.
        ...(c.headDim % 16 === 0 || c.headDim === 8 ? [{ count: 45, past: 0 }, { count: 37, past: 50 }] : []),
        // Head size 8: a decode over several of the hd-8 prefill kernel's 128-key spans and of the
        // decode kernel's spans (16-256 keys by row bytes), ending inside a group of four keys.
        ...(c.headDim === 8 ? [{ count: 1, past: 601 }, { count: 3, past: 129 }] : []),
        // More sequences than 4 per thread: decodes take every KV head of their sequence per item.
        ...[5, 16, 17, 40].map((past) => ({ count: 1, past })),
      ];
      const { seqs, tables, rows: row } = scatteredSequences(shapes, c.blockSize, numBlocks);
      const q = seeded(row * c.heads * c.headDim, 3);
      const expected = referenceAttention(c, q, st.decode(k), st.decode(v), seqs, tables);
      // Every kernel this CPU runs (a level it lacks falls back to a lower one, tested already).
      const levels = new Set(SIMD_LEVELS.map((level) => native.setSimd(level)));
      for (const level of levels) {
        native.setSimd(level);
        const out = new Float32Array(q.length);
        native.attention(q, out, k, v, Int32Array.from(seqs), Int32Array.from(tables), Int32Array.from([c.heads, c.kvHeads, c.headDim, c.blockSize, st.code]), 1 / Math.sqrt(c.headDim));
        expect({ level, diff: maxAbsDiff(out, expected) < 1e-5 }).toEqual({ level, diff: true });
      }
    });

    // A decode's output must not depend on how many sequences share its step: at one thread, four
    // or more split the batch as a wide one (every KV head of a sequence per item; GQA groups at
    // head sizes of multiples of 16 on AVX-512: up to 8 KV heads, each 64-key block in turn). The Q8_0
    // linears quantize their input rows to int8, which turns a last-bit difference here into a
    // visible one in the logits (speculative and plain servers compose their steps differently).
    it.each(storages)('$name cache: a decode is the same bits alone and in a wide batch', (st) => {
      native.setThreads(1);
      const numBlocks = 48;
      const { k, v } = seededCaches(c, st, numBlocks, 4);
      const pasts = [21, 5, 40, 129, 12];
      const { seqs, tables, rows } = scatteredSequences(pasts.map((past) => ({ count: 1, past })), c.blockSize, numBlocks);
      // Scores of a trained model's size (a few units), where a kernel's rounding shows.
      const q = seeded(rows * c.heads * c.headDim, 6).map((x) => 4 * x);
      const dims = Int32Array.from([c.heads, c.kvHeads, c.headDim, c.blockSize, st.code]);
      const width = c.heads * c.headDim;
      for (const level of new Set(SIMD_LEVELS.map((l) => native.setSimd(l)))) {
        native.setSimd(level);
        const batch = new Float32Array(q.length);
        native.attention(q, batch, k, v, Int32Array.from(seqs), Int32Array.from(tables), dims, 1 / Math.sqrt(c.headDim));
        pasts.forEach((_, s) => {
          const alone = new Float32Array(q.length);
          native.attention(q, alone, k, v, Int32Array.from(seqs.slice(4 * s, 4 * s + 4)), Int32Array.from(tables), dims, 1 / Math.sqrt(c.headDim));
          const rowOf = (a: Float32Array) => Array.from(a.subarray(s * width, (s + 1) * width));
          expect({ level, seq: s, out: rowOf(batch) }).toEqual({ level, seq: s, out: rowOf(alone) });
        });
      }
    });
  });

  it('writeKv narrows rows into the named slots and leaves the others alone', () => {
    const rows = Float32Array.from([1.5, -2.25, 3.0078125, 1e-3, 7, 8, 10, 12]);
    for (const st of storages) {
      const k = st.encode(new Float32Array(6 * 4).fill(0.5));
      const v = st.encode(new Float32Array(6 * 4).fill(0.5));
      native.writeKv(rows.subarray(0, 4), rows.subarray(4), k, v, Int32Array.from([4]), st.code);
      const kf = st.decode(k);
      expect(Array.from(kf).slice(16, 20)).toEqual(Array.from(st.decode(st.encode(rows.subarray(0, 4)))));
      expect(Array.from(st.decode(v)).slice(16, 20)).toEqual([7, 8, 10, 12]);
      expect(kf[15]).toBe(0.5);
      expect(kf[20]).toBe(0.5);
    }
  });

  it('writeKv rounds every kind of value as the scalar encoders do (rows long enough for the SIMD path and its tail)', () => {
    // Bit patterns across the whole float32 range: normal, subnormal (both as float32 and as the
    // half they become), ties at every rounding position, overflow to infinity, infinities, NaN;
    // for the 8-bit floats also their subnormals, ties and saturation (e4m3 448 / 464 / 480,
    // e5m2 57344 / 61440), the same rows.
    const bits = new Uint32Array(8 * 4099 + 5);
    let s = 7;
    for (let i = 0; i < bits.length; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      const pick = i % 7;
      if (pick === 0) bits[i] = s; // anything
      else if (pick === 1) bits[i] = ((0x60 + (s & 0x1f)) << 23) | ((s >>> 9) & 0x7fffff) | (s & 0x80000000); // near half's range, subnormals included
      else if (pick === 2) bits[i] = (s & 0xffffe000) | 0x1000; // a half tie
      else if (pick === 3) bits[i] = (s & 0xffff0000) | 0x8000; // a bfloat16 tie
      else if (pick === 4) bits[i] = [0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0x477fefff, 0x477ff000, 0x00000001, 0x80000000][s & 7];
      else if (pick === 5) bits[i] = ((0x70 + (s & 0x1f)) << 23) | ((s >>> 9) & 0x7c0000) | (s & 0x80000000); // near fp8 ranges, few mantissa bits: ties
      else bits[i] = [0x43e00000, 0x43e80000, 0x43f00000, 0x47600000, 0x47700000, 0x3a800000, 0x37800000, 0xbb400000][s & 7]; // 448 464 480 57344 61440 2^-10 2^-16 -3*2^-9
    }
    const values = new Float32Array(bits.buffer);
    const row = values.length; // one row: 4099 SIMD groups of eight and a tail of five
    for (const st of storages.filter((x) => x.code !== 0)) {
      const expected = st.encode(values);
      const k = expected instanceof Uint8Array ? new Uint8Array(row) : new Uint16Array(row);
      const v = k.slice();
      native.writeKv(values, values, k, v, Int32Array.from([0]), st.code);
      const signBit = expected instanceof Uint8Array ? 0x80 : 0x8000;
      let mismatches = 0;
      for (let i = 0; i < row; i++) {
        // A 16-bit NaN keeps its sign; the 8-bit formats store NaN as 0x7f (both sides check NaN only).
        const same = st.isNan(expected[i]) ? st.isNan(k[i]) && (signBit === 0x80 || (k[i] & signBit) === (expected[i] & signBit)) : k[i] === expected[i];
        if (!same || k[i] !== v[i]) mismatches++;
      }
      expect({ storage: st.name, mismatches }).toEqual({ storage: st.name, mismatches: 0 });
    }
  });

  it('rejects indices outside the cache instead of reading them', () => {
    const k = new Float32Array(4 * 4 * 8);
    const q = new Float32Array(2 * 8);
    const dims = Int32Array.from([2, 1, 8, 4, 0]);
    const call = (seqs: number[], tables: number[]) => () => native.attention(q, new Float32Array(q.length), k, k, Int32Array.from(seqs), Int32Array.from(tables), dims, 1);
    expect(call([0, 1, 3, 0], [9])).toThrow(/block id is out of range/);
    expect(call([0, 1, 7, 0], [0])).toThrow(/block table is out of range/);
    expect(call([0, 2, 0, 0], [0])).toThrow(/rows are out of range/);
    expect(() => native.attention(q, q, k, k, Int32Array.from([0, 1, 0, 0]), Int32Array.from([0]), Int32Array.from([2, 1, 8, 4, 2]), 1)).toThrow(/kvType does not match/);
    expect(() => native.writeKv(q.subarray(0, 8), q.subarray(8), k, k, Int32Array.from([16]), 0)).toThrow(/slot is out of range/);
    expect(() => native.setSimd('sse9' as 'avx2')).toThrow(/expected 'portable', 'avx2', 'avx512' or 'avx512bf16'/);
  });
});

gate.describe('segmented runner (native attention)', () => {
  // GQA (8 query heads on 2 KV heads), head size 16: the SIMD kernel and the grouped path.
  const config = llamaConfig({ hiddenSize: 128, intermediateSize: 192, numLayers: 3, numHeads: 8, numKvHeads: 2 });
  const model = randomModel(config, 11);
  const runners: Record<string, ModelRunner> = {};
  const options = { blockSize: 4, numBlocks: 96, device: 'cpu' as const, intraOpThreads: 1 };
  beforeAll(async () => {
    runners.native = await createRunner(model, { ...options, attention: 'native' });
    runners.graph = await createRunner(model, { ...options, attention: 'graph' });
    runners.bf16 = await createRunner(model, { ...options, attention: 'native', kvCacheDtype: 'bfloat16' });
    runners.f16 = await createRunner(model, { ...options, attention: 'native', kvCacheDtype: 'float16' });
  });
  afterAll(async () => {
    for (const r of Object.values(runners)) await r.dispose();
  });

  const argmax = (a: Float32Array, at: number, n: number) => {
    let best = at;
    for (let i = at; i < at + n; i++) if (a[i] > a[best]) best = i;
    return best - at;
  };

  /** Greedy decoding of three prompts together (their prefills in one step), `steps` tokens each. */
  async function greedy(runner: ModelRunner, prompts: number[][], steps: number): Promise<{ tokens: number[][]; logits: Float32Array[] }> {
    const alloc = new BlockAllocator(runner);
    const tables = prompts.map((p) => alloc.table(p.length + steps));
    const seqs = prompts.map((p) => [...p]);
    const logits: Float32Array[] = [];
    let batch: StepSequence[] = prompts.map((p, i) => ({ tokens: p, positionOffset: 0, blockTable: tables[i] }));
    for (let s = 0; s < steps; s++) {
      const r = await runner.step(batch);
      logits.push(r.logits.slice());
      batch = seqs.map((seq, i) => {
        seq.push(argmax(r.logits, i * config.vocabSize, config.vocabSize));
        return { tokens: [seq[seq.length - 1]], positionOffset: seq.length - 1, blockTable: tables[i] };
      });
    }
    return { tokens: seqs, logits };
  }

  const PROMPTS = [
    [1, 17, 250, 33, 9, 400, 12, 8, 77, 3, 301],
    [1, 5],
    [1, 99, 98, 97, 96, 95, 94, 93, 92, 91, 90, 89, 88, 87, 86, 85, 84, 83, 82, 81, 80],
  ];

  it('gives the in-graph path greedy tokens and logits, prefills of several sequences in one step', async () => {
    const a = await greedy(runners.native, PROMPTS, 12);
    const b = await greedy(runners.graph, PROMPTS, 12);
    expect(a.tokens).toEqual(b.tokens);
    a.logits.forEach((l, i) => expect(maxAbsDiff(l, b.logits[i])).toBeLessThan(1e-4));
  });

  it("gives a sequence the same logits alone and batched with others' prefill chunks and decodes", async () => {
    const runner = runners.native;
    const alloc = new BlockAllocator(runner);
    const prompt = PROMPTS[2];
    const mine = alloc.table(prompt.length + 1);
    // A step's result is valid until the next step (StepResult): each is copied before it.
    const alone = (await runner.step([{ tokens: prompt.slice(0, 10), positionOffset: 0, blockTable: mine }])).logits.slice();
    const aloneNext = (await runner.step([{ tokens: prompt.slice(10), positionOffset: 10, blockTable: mine }])).logits.slice();
    const again = alloc.table(prompt.length + 1);
    const other = alloc.table(PROMPTS[0].length);
    const decoding = alloc.table(8);
    await runner.step([{ tokens: [1, 2, 3], positionOffset: 0, blockTable: decoding }]);
    const mixed = await runner.step([
      { tokens: PROMPTS[0], positionOffset: 0, blockTable: other },
      { tokens: prompt.slice(0, 10), positionOffset: 0, blockTable: again },
      { tokens: [4], positionOffset: 3, blockTable: decoding },
    ]);
    const v = config.vocabSize;
    expect(maxAbsDiff(mixed.logits.subarray(v, 2 * v), alone)).toBeLessThan(1e-5);
    const mixedNext = await runner.step([
      { tokens: [5], positionOffset: 4, blockTable: decoding },
      { tokens: prompt.slice(10), positionOffset: 10, blockTable: again },
    ]);
    expect(maxAbsDiff(mixedNext.logits.subarray(v), aloneNext)).toBeLessThan(1e-5);
  });

  it.each([
    ['bf16', 0.05],
    ['f16', 0.01],
  ])('a %s cache keeps the greedy tokens of the float32 one and close logits', async (name, tolerance) => {
    const a = await greedy(runners[name], PROMPTS, 8);
    const b = await greedy(runners.native, PROMPTS, 8);
    expect(a.tokens).toEqual(b.tokens);
    a.logits.forEach((l, i) => expect(maxAbsDiff(l, b.logits[i])).toBeLessThan(tolerance));
  });
});

gate.it('consumeWeights releases each tensor once its segment is built, all but the embedding table, and decodes the same', async () => {
  const config = llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, tieWordEmbeddings: false });
  const options = { blockSize: 4, numBlocks: 16, device: 'cpu' as const, intraOpThreads: 1, attention: 'native' as const };
  const keeping = randomModel(config, 3);
  const owned = randomModel(config, 3);
  const map = new WeightMap();
  for (const name of owned.weights!.names()) map.set(name, owned.weights!.get(name));
  const reference = await createRunner(keeping, options);
  const consuming = await createRunner({ ...owned, weights: map }, { ...options, consumeWeights: true });
  try {
    expect(keeping.weights!.names().length).toBeGreaterThan(10);
    expect(map.names()).toEqual(['model.embed_tokens.weight']);
    const step = { tokens: [1, 7, 300, 42, 5], positionOffset: 0, blockTable: [0, 1] };
    const [a, b] = [await consuming.step([step]), await reference.step([step])];
    expect(maxAbsDiff(a.logits, b.logits)).toBe(0);
  } finally {
    await consuming.dispose();
    await reference.dispose();
  }
});

gate.it('a model outside the kernel limits (head size 512) runs with in-graph attention, and asking for native says why', async () => {
  const model = randomModel(llamaConfig({ hiddenSize: 1024, intermediateSize: 64, numLayers: 1, numHeads: 2, numKvHeads: 2 }), 5);
  const options = { blockSize: 4, numBlocks: 8, device: 'cpu' as const, intraOpThreads: 1 };
  await expect(createRunner(model, { ...options, attention: 'native' })).rejects.toThrow(/head size 512 .* within the kernel's limits/);
  const runner = await createRunner(model, options);
  const r = await runner.step([{ tokens: [1, 2, 3], positionOffset: 0, blockTable: [0] }]);
  expect(r.logits.length).toBe(model.config.vocabSize);
  await runner.dispose();
});
