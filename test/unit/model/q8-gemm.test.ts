/** @jest-environment ./test/helpers/ort-environment.js */
// The addon's Q8_0 GEMM (AVX512-VNNI, or AVX2 on CPUs without it), SwiGLU and RoPE
// (native/src/q8-gemm.cc, q8-gemm-avx2.inc) against float64 and integer references written here,
// and the segmented runner that runs a Q8_0 model's linears in them (runner/backends/native-q8.ts)
// against the same runner with MatMulNBits.
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { quantizeQ8_0 } from '../../../src/model/gguf/quantize';
import { unpackGgml } from '../../../src/model/graph/ggml-unpack';
import { createRunner } from '../../../src/model/runner';
import { nativeKernels, type Q8Kernel } from '../../../src/model/runner/native-kernels';
import { createSegmentedRunner, type SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { ModelRunner } from '../../../src/model/types';
import { maxRelDiff } from '../../../bench/kernel-timing';

const native = nativeKernels();
const q8 = native?.q8Available === true;
if (!q8) console.warn('\n*** SKIPPING the Q8_0 GEMM tests: the addon is not built or this CPU has neither AVX512-VNNI nor AVX2 ***\n');
const q8Describe = q8 ? describe : describe.skip;
const reason = q8 ? '' : ' [skipped: no addon, or neither AVX512-VNNI nor AVX2]';

/** The kernels this CPU runs (q8Gemm throws for one it lacks): AVX2 wherever q8Available, VNNI too on AVX-512 CPUs. */
const kernels: Q8Kernel[] = !q8
  ? []
  : (['avx2', 'avx512vnni'] as const).filter((kernel) => {
      try {
        native.q8Gemm(native.q8Pack(new Uint8Array(32).fill(128), new Float32Array(1), 1, 32), new Float32Array(32), new Float32Array(1), 1, 1, 32, kernel);
        return true;
      } catch {
        return false;
      }
    });
if (q8 && !kernels.includes('avx512vnni')) console.warn('\n*** the Q8_0 tests check the AVX2 kernel only: this CPU has no AVX512-VNNI ***\n');

function seeded(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

/** Round half to even, as the kernel's cvtps2dq. */
function roundEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** x quantized per row and 32-block to int8 (scale max|x| / 127), dequantized again, in float64. */
function quantizedRows(x: Float32Array, k: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[b + i]));
    const d = Math.fround(amax / 127);
    const id = amax > 0 ? Math.fround(127 / amax) : 0;
    for (let i = 0; i < 32; i++) out[b + i] = roundEven(Math.fround(x[b + i] * id)) * d;
  }
  void k;
  return out;
}

/** y = xq W^T in float64 with W = scale * (code - 128). */
function reference(x: Float64Array, codes: Uint8Array, scales: Float32Array, m: number, n: number, k: number): Float64Array {
  const y = new Float64Array(m * n);
  for (let r = 0; r < m; r++)
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let i = 0; i < k; i++) sum += x[r * k + i] * scales[(j * k + i) >> 5] * (codes[j * k + i] - 128);
      y[r * n + j] = sum;
    }
  return y;
}

/**
 * y = xq W^T the way the format defines it, independent of the kernels' layout: each row's
 * 32-blocks quantized to int8 codes (round half to even), exact integer dot products per block,
 * then sum over blocks of dot * weight scale * activation scale, in float64.
 */
function integerReference(x: Float32Array, codes: Uint8Array, scales: Float32Array, m: number, n: number, k: number): Float64Array {
  const blocks = k / 32;
  const y = new Float64Array(m * n);
  const q = new Int32Array(k);
  const d = new Float64Array(blocks);
  for (let r = 0; r < m; r++) {
    for (let b = 0; b < blocks; b++) {
      let amax = 0;
      for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[r * k + b * 32 + i]));
      d[b] = Math.fround(amax / 127);
      const id = amax > 0 ? Math.fround(127 / amax) : 0;
      for (let i = 0; i < 32; i++) q[b * 32 + i] = roundEven(Math.fround(x[r * k + b * 32 + i] * id));
    }
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let b = 0; b < blocks; b++) {
        let dot = 0;
        for (let i = 0; i < 32; i++) dot += q[b * 32 + i] * (codes[j * k + b * 32 + i] - 128);
        sum += dot * scales[j * blocks + b] * d[b];
      }
      y[r * n + j] = sum;
    }
  }
  return y;
}

q8Describe(`q8Gemm, each kernel this CPU has, against an integer reference${reason}`, () => {
  // Odd rows (past the 4-row tile and the 64-row chunk), columns past the 16-column group and the
  // work item, several blocks; rows of zeros; the extreme codes: -128 and 127 against activations
  // of +-127 (every block's largest magnitude quantizes to 127), whose byte-pair products 2 x 128 x
  // 127 = 32512 are the most the AVX2 kernel's int16 pair sums hold.
  const extremes = (n: number, k: number, seed: number) => {
    let s = seed;
    const codes = Uint8Array.from({ length: n * k }, (_, i) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return i % 3 === 0 ? 0 : i % 3 === 1 ? 255 : s >>> 24; // q = -128, 127, random
    });
    const scales = seeded((n * k) / 32, seed + 1, 0.01).map((v) => Math.abs(v) + 1e-3);
    return { codes, scales };
  };
  const activations = (m: number, k: number, seed: number) => {
    const x = seeded(m * k, seed, 4);
    for (let r = 0; r < m; r++) {
      if (r % 4 === 2) x.fill(0, r * k, (r + 1) * k); // a row of zeros
      if (r % 4 === 1) for (let i = 0; i < k; i++) x[r * k + i] = i % 2 ? 3 : -3; // every code +-127
    }
    return x;
  };
  const cases: Array<[m: number, n: number, k: number, threads: number]> = [
    [1, 17, 32, 1],
    [3, 8, 64, 1],
    [5, 37, 96, 1],
    [6, 100, 64, 1],
    [8, 70, 64, 2],
    [9, 100, 256, 2],
    [67, 70, 160, 2],
    [69, 100, 64, 2], // a last 64-row chunk of five rows
  ];
  for (const kernel of kernels)
    for (const [m, n, k, threads] of cases) {
      it(`${kernel}: m ${m}, n ${n}, k ${k}, ${threads} thread(s), extreme codes and zero rows`, () => {
        const { codes, scales } = extremes(n, k, m * 31 + n);
        const x = activations(m, k, m + k);
        native!.setThreads(threads);
        const y = new Float32Array(m * n).fill(NaN);
        native!.q8Gemm(native!.q8Pack(codes, scales, n, k), x, y, m, n, k, kernel);
        const want = integerReference(x, codes, scales, m, n, k);
        expect(maxRelDiff(y, want)).toBeLessThan(1e-6);
        for (let r = 2; r < m; r += 4) expect(Array.from(y.subarray(r * n, (r + 1) * n)).every((v) => v === 0)).toBe(true);
      });
    }

  it('the AVX2 and VNNI kernels give the same bits (where the CPU has both)', () => {
    const [m, n, k] = [37, 90, 320];
    const q = unpackGgml('q8_0', quantizeQ8_0(seeded(n * k, 21, 0.5)), n * k)!;
    const packed = native!.q8Pack(q.codes, q.scales, n, k);
    const x = seeded(m * k, 22);
    native!.setThreads(2);
    const outs = kernels.map((kernel) => {
      const y = new Float32Array(m * n);
      native!.q8Gemm(packed, x, y, m, n, k, kernel);
      return y;
    });
    for (const y of outs) expect(y).toEqual(outs[0]);
    expect(maxRelDiff(outs[0], integerReference(x, q.codes, q.scales, m, n, k))).toBeLessThan(1e-6);
  });

  // Five to eight rows (a verification step's) run as one tall tile; every row must be the bits
  // it is alone, or a verified position's logits would differ from the decode's.
  it.each([5, 6, 7, 8, 69])('%i rows: each row the same bits as alone, with each kernel', (m) => {
    const [n, k] = [100, 96];
    const q = unpackGgml('q8_0', quantizeQ8_0(seeded(n * k, 31, 0.5)), n * k)!;
    const packed = native!.q8Pack(q.codes, q.scales, n, k);
    const x = seeded(m * k, 32 + m, 3);
    native!.setThreads(2);
    for (const kernel of kernels) {
      const together = new Float32Array(m * n);
      native!.q8Gemm(packed, x, together, m, n, k, kernel);
      for (let r = 0; r < m; r++) {
        const alone = new Float32Array(n);
        native!.q8Gemm(packed, x.subarray(r * k, (r + 1) * k), alone, 1, n, k, kernel);
        expect({ kernel, r, y: Array.from(together.subarray(r * n, (r + 1) * n)) }).toEqual({ kernel, r, y: Array.from(alone) });
      }
    }
  });

  it('a kernel name that is not one, or not this CPU\'s, throws', () => {
    const packed = native!.q8Pack(new Uint8Array(32).fill(128), new Float32Array(1), 1, 32);
    const call = (kernel: string) => () => native!.q8Gemm(packed, new Float32Array(32), new Float32Array(1), 1, 1, 32, kernel as Q8Kernel);
    expect(call('avx3')).toThrow(/expected/);
    if (!kernels.includes('avx512vnni')) expect(call('avx512vnni')).toThrow(/expected/);
  });
});

q8Describe(`q8Gemm (Q8_0 x int8, the CPU's best kernel)${reason}`, () => {
  // Rows not a multiple of the 4-row tile nor of the 64-row chunk, columns not a multiple of 16 nor of the 3-group item.
  const cases: Array<[m: number, n: number, k: number, threads: number]> = [
    [1, 16, 32, 1],
    [5, 37, 96, 1],
    [7, 50, 64, 1],
    [70, 33, 128, 1],
    [33, 200, 640, 2], // enough work for the pool's helper
    [150, 40, 64, 2], // a prefill's rows: three 64-row chunks on two threads, the last partial
  ];
  for (const [m, n, k, threads] of cases) {
    it(`m ${m}, n ${n}, k ${k}, ${threads} thread(s): equals the float64 reference over int8-quantized rows`, () => {
      const w = seeded(n * k, n * 7 + k, 0.5);
      const q = unpackGgml('q8_0', quantizeQ8_0(w), n * k)!;
      const x = seeded(m * k, m * 13 + k);
      native!.setThreads(threads);
      const y = new Float32Array(m * n);
      native!.q8Gemm(native!.q8Pack(q.codes, q.scales, n, k), x, y, m, n, k);
      expect(maxRelDiff(y, reference(quantizedRows(x, k), q.codes, q.scales, m, n, k))).toBeLessThan(1e-5);
      // And close to the unquantized activations (int8 rows: ~1% of the output's range).
      expect(maxRelDiff(y, reference(Float64Array.from(x), q.codes, q.scales, m, n, k))).toBeLessThan(3e-2);
    });
  }

  it('back-to-back jobs on two threads: every one equals the first (a helper that wakes late must not run a finished job)', () => {
    // The caller claims what its helper has not yet started and returns without waiting for a
    // helper that never joined: many short jobs in a row give late wake-ups every chance to
    // touch the next job's items.
    const [m, n, k] = [9, 96, 128];
    const q = unpackGgml('q8_0', quantizeQ8_0(seeded(n * k, 11, 0.5)), n * k)!;
    const packed = native!.q8Pack(q.codes, q.scales, n, k);
    native!.setThreads(2);
    const xs = [seeded(m * k, 1), seeded(m * k, 2)];
    const want = xs.map((x) => {
      const y = new Float32Array(m * n);
      native!.q8Gemm(packed, x, y, m, n, k);
      return y;
    });
    let mismatches = 0;
    const y = new Float32Array(m * n);
    for (let i = 0; i < 3000; i++) {
      y.fill(NaN);
      native!.q8Gemm(packed, xs[i % 2], y, m, n, k);
      if (!y.every((v, j) => v === want[i % 2][j])) mismatches++;
    }
    expect(mismatches).toBe(0);
  });

  it('weights packed into successive huge-page slabs (64 MB each) give the same outputs', () => {
    // ~75 MB of packed copies of one weight: the later ones are cut from a second slab
    // (native/src/huge-page-arena.h); every copy must hold the same bytes and compute the same rows.
    const [m, n, k] = [32, 768, 512];
    const q = unpackGgml('q8_0', quantizeQ8_0(seeded(n * k, 5, 0.5)), n * k)!;
    const copies = Array.from({ length: 170 }, () => native!.q8Pack(q.codes, q.scales, n, k));
    const first = copies[0];
    expect(copies.every((c) => c.length === first.length && Buffer.compare(Buffer.from(c.buffer, c.byteOffset, c.length), Buffer.from(first.buffer, first.byteOffset, first.length)) === 0)).toBe(true);
    native!.setThreads(2);
    const x = seeded(m * k, 9);
    const want = new Float32Array(m * n);
    native!.q8Gemm(first, x, want, m, n, k);
    expect(maxRelDiff(want, reference(quantizedRows(x, k), q.codes, q.scales, m, n, k))).toBeLessThan(1e-5);
    const y = new Float32Array(m * n);
    native!.q8Gemm(copies[copies.length - 1], x, y, m, n, k);
    expect(y).toEqual(want);
  });

  it('zero rows give zeros; bad sizes throw', () => {
    const q = unpackGgml('q8_0', quantizeQ8_0(seeded(20 * 64, 3)), 20 * 64)!;
    const packed = native!.q8Pack(q.codes, q.scales, 20, 64);
    const y = new Float32Array(2 * 20).fill(7);
    native!.q8Gemm(packed, new Float32Array(2 * 64), y, 2, 20, 64);
    expect(Array.from(y).every((v) => v === 0)).toBe(true);
    expect(() => native!.q8Gemm(packed, new Float32Array(64), new Float32Array(33), 1, 33, 64)).toThrow(/packed does not match/);
    expect(() => native!.q8Gemm(packed, new Float32Array(63), new Float32Array(20), 1, 20, 64)).toThrow(/x must be/);
    expect(() => native!.q8Pack(q.codes, q.scales, 20, 48)).toThrow(/multiple of 32/);
  });

  // A few rows on the caller; from 32K outputs (a batch-32 decode, a prefill) in 16-row chunks over the pool, the last one partial.
  it.each(
    kernels.flatMap((kernel) =>
      [
        [3, 37],
        [2, 5],
        [32, 1100],
        [300, 1000],
      ].map(([rows, width]) => [kernel, rows, width] as const),
    ),
  )('siluMul (%s): silu(gate) * up per row (%i rows of %i)', (kernel, rows, width) => {
    native!.setThreads(2);
    const gu = seeded(rows * 2 * width, 11, 8);
    gu[0] = -100; // exp(100) clamped at exp-poly.h's kMax: silu ~0, not NaN
    gu[1] = 90; // exp(-90) below kMin is 0: silu is the gate itself
    const out = new Float32Array(rows * width);
    native!.siluMul(gu, out, width, kernel);
    const want = Array.from({ length: rows * width }, (_, i) => {
      const r = Math.floor(i / width);
      const g = gu[r * 2 * width + (i % width)];
      return (g / (1 + Math.exp(-g))) * gu[r * 2 * width + width + (i % width)];
    });
    expect(maxRelDiff(out, want)).toBeLessThan(1e-6);
  });

  it.each(kernels.flatMap((kernel) => [[3, 37], [32, 1100]].map(([rows, width]) => [kernel, rows, width] as const)))(
    'geluTanhMul (%s): gelu_tanh(gate) * up per row (%i rows of %i)',
    (kernel, rows, width) => {
      native!.setThreads(2);
      const gu = seeded(rows * 2 * width, 13, 8);
      gu[0] = -100; // the tanh saturates: ~0, not NaN
      gu[1] = 90; // the gate itself
      const out = new Float32Array(rows * width);
      native!.geluTanhMul(gu, out, width, kernel);
      const want = Array.from({ length: rows * width }, (_, i) => {
        const r = Math.floor(i / width);
        const g = gu[r * 2 * width + (i % width)];
        const gelu = 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g ** 3)));
        return gelu * gu[r * 2 * width + width + (i % width)];
      });
      expect(maxRelDiff(out, want)).toBeLessThan(1e-6);
    },
  );

  it('rope: each head of each row rotated by its halves with the row cos/sin', () => {
    const rows = 3;
    const heads = 2;
    const headDim = 8;
    const half = headDim / 2;
    const x = seeded(rows * heads * headDim, 5);
    const cos = seeded(rows * half, 6);
    const sin = seeded(rows * half, 7);
    const want = Array.from(x);
    for (let r = 0; r < rows; r++)
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < half; i++) {
          const at = (r * heads + h) * headDim;
          const [x1, x2, c, s] = [x[at + i], x[at + i + half], cos[r * half + i], sin[r * half + i]];
          want[at + i] = x1 * c - x2 * s;
          want[at + i + half] = x2 * c + x1 * s;
        }
    native!.rope(x, cos, sin, heads, headDim);
    expect(maxRelDiff(x, want)).toBeLessThan(1e-6);
    expect(() => native!.rope(x, cos.subarray(1), sin, heads, headDim)).toThrow(/cos and sin must be/);
  });
});

q8Describe(`segmented runner with the addon's Q8_0 linears${reason}`, () => {
  it('decodes like the MatMulNBits runner: logits within int8 noise, same greedy tokens, prefill and batched decode', async () => {
    // An untied head in Q8_0 (an lm_head.weight), dimensions multiples of 32, GQA.
    const config = llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 96, tieWordEmbeddings: false });
    const model = quantizedQ8(randomModel(config, 4));
    const make = (nativeQ8Gemm: boolean) => createRunner(model, { blockSize: 16, numBlocks: 16, device: 'cpu', intraOpThreads: 1, nativeQ8Gemm });
    const runners: ModelRunner[] = [await make(true), await make(false)];
    try {
      // The first runs the whole decoder in the addon, norms included; the second MatMulNBits sessions.
      expect(runners.map((r) => (r as SegmentedRunner).backendName)).toEqual(['native-q8', 'onnx-segments']);
      const argmax = (v: Float32Array, at: number) => v.subarray(at, at + config.vocabSize).reduce((best, x, i, row) => (x > row[best] ? i : best), 0);
      const prompts = [[1, 5, 9, 13, 17, 21, 25], [2, 4, 6]];
      let batch = prompts.map((tokens, s) => ({ tokens, positionOffset: 0, blockTable: [4 * s, 4 * s + 1] }));
      for (let step = 0; step < 6; step++) {
        const [a, b] = await Promise.all(runners.map((r) => r.step(batch)));
        expect(maxRelDiff(a.logits, b.logits)).toBeLessThan(5e-2);
        const next = batch.map((_, s) => argmax(b.logits, s * config.vocabSize));
        // Greedy agrees wherever the reference's top two are not within the int8 noise.
        batch.forEach((_, s) => {
          const row = Array.from(b.logits.subarray(s * config.vocabSize, (s + 1) * config.vocabSize)).sort((x, y) => y - x);
          if (row[0] - row[1] > 5e-2 * Math.abs(row[0])) expect(argmax(a.logits, s * config.vocabSize)).toBe(next[s]);
        });
        batch = batch.map((seq, s) => ({ ...seq, tokens: [next[s]], positionOffset: seq.positionOffset + seq.tokens.length }));
      }
    } finally {
      await Promise.all(runners.map((r) => r.dispose()));
    }
  });
});

q8Describe(`segmented runner with the addon's Q8_0 linears: the head's output buffer${reason}`, () => {
  // A single-pass step writes its logits into a buffer the runner keeps across steps (StepResult:
  // valid until the next step); a step in several passes must give each pass its own.
  it('a step in passes equals the same step in one pass; each decode step rewrites the kept buffer with its own logits', async () => {
    const config = llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 96, tieWordEmbeddings: false });
    const model = quantizedQ8(randomModel(config, 6));
    const options = { blockSize: 4, numBlocks: 32, device: 'cpu' as const, intraOpThreads: 1 };
    const whole = await createSegmentedRunner(model, options, native!);
    const inPasses = await createSegmentedRunner(model, { ...options, maxPassRows: 4 }, native!);
    try {
      const prompts = [[1, 5, 9, 13, 17, 21, 25], [2, 4, 6], [7, 8, 9, 10, 11]];
      const tables = prompts.map((_, s) => [4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3]);
      const prefill = prompts.map((tokens, s) => ({ tokens, positionOffset: 0, blockTable: tables[s] }));
      const a = await whole.step(prefill);
      const aLogits = Float32Array.from(a.logits);
      const b = await inPasses.step(prefill);
      expect(maxRelDiff(b.logits, aLogits)).toBeLessThan(1e-5);
      // Decode steps: the kept buffer is rewritten each time, by exactly what the step computes.
      let next = prompts.map((p, s) => ({ tokens: [3 + s], positionOffset: p.length, blockTable: tables[s] }));
      let previous: Float32Array | null = null;
      for (let step = 0; step < 3; step++) {
        const x = await whole.step(next);
        const xLogits = Float32Array.from(x.logits);
        const y = await inPasses.step(next);
        expect(x.logits.length).toBe(prompts.length * config.vocabSize);
        expect(maxRelDiff(y.logits, xLogits)).toBeLessThan(1e-5);
        if (previous) expect(maxRelDiff(xLogits, previous)).toBeGreaterThan(1e-3);
        previous = xLogits;
        next = next.map((seq, s) => ({ ...seq, tokens: [(seq.tokens[0] * 7 + s) % config.vocabSize], positionOffset: seq.positionOffset + 1 }));
      }
      // One sequence alone (every GEMM and norm at one row) equals its row of a two-sequence step.
      const alone = { tokens: [5], positionOffset: next[0].positionOffset, blockTable: tables[0] };
      const single = Float32Array.from((await whole.step([alone])).logits);
      const pair = await whole.step([alone, next[1]]);
      expect(maxRelDiff(single, pair.logits.subarray(0, config.vocabSize))).toBeLessThan(1e-5);
      // A prompt-logprobs step (every row's logits) gets its own array: the kept one stays one row per sequence.
      const kept = (r: unknown) => (r as { headOut: Float32Array }).headOut.length;
      const withRows = await whole.step([{ tokens: [1, 2, 3, 4, 5, 6, 7, 8], positionOffset: 0, blockTable: [12, 13, 14, 15], allLogits: true }]);
      expect(withRows.allLogits[0]!.length).toBe(8 * config.vocabSize);
      expect(kept(whole)).toBe(prompts.length * config.vocabSize);
    } finally {
      await whole.dispose();
      await inPasses.dispose();
    }
  });
});

q8Describe(`the addon's thread pool shared by two worker threads${reason}`, () => {
  // Two engines in one process (or two servers in one test) step from different worker threads
  // into the one pool; each job must run alone or the second overwrites the first's work list.
  it('gives every caller its own product when jobs arrive from two threads at once', async () => {
    const { Worker } = await import('node:worker_threads');
    const { nativeAddonPath } = await import('../../../src/model/runner/native-kernels');
    const worker = (seed: number) =>
      new Promise<{ mismatches: number; runs: number }>((resolve, reject) => {
        const w = new Worker(
          `const { parentPort, workerData } = require('node:worker_threads');
           const addon = require(workerData.path);
           addon.setThreads(2);
           const [m, n, k] = [32, 1024, 256];
           let s = workerData.seed;
           const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
           const codes = Uint8Array.from({ length: n * k }, () => Math.floor((rand() + 1) * 127.5));
           const scales = Float32Array.from({ length: (n * k) / 32 }, () => 0.01 + Math.abs(rand()) * 0.01);
           const x = Float32Array.from({ length: m * k }, rand);
           const packed = addon.q8Pack(codes, scales, n, k);
           const first = new Float32Array(m * n);
           addon.q8Gemm(packed, x, first, m, n, k);
           let mismatches = 0;
           const y = new Float32Array(m * n);
           const runs = 1000;
           for (let r = 0; r < runs; r++) {
             addon.q8Gemm(packed, x, y, m, n, k);
             for (let i = 0; i < y.length; i++) if (y[i] !== first[i]) { mismatches++; break; }
           }
           parentPort.postMessage({ mismatches, runs });`,
          { eval: true, workerData: { path: nativeAddonPath('native/build/Release/ortllm_native.node') ?? '', seed } },
        );
        w.once('message', resolve);
        w.once('error', reject);
      });
    const results = await Promise.all([worker(7), worker(11)]);
    for (const r of results) expect(r).toEqual({ mismatches: 0, runs: 1000 });
  }, 60_000);
});
