/** @jest-environment ./test/helpers/ort-environment.js */
// The small float32 decoder path (runner/backends/native-f32.ts, native/src/f32-decoder.cc): the addon's
// GEMM, QKV (with RoPE) and MLP calls at every kernel level this CPU runs (portable, AVX2,
// AVX-512) against float64 references written here, the levels' floats against each other, and
// the runner on stories260K against the same model in onnxruntime segments (prefill chunks, mixed
// batches, float16 KV, greedy decoding; the logits within graph-gguf.test.ts's bar against the
// reference forward pass, 1e-3), and which models the size policy gives it.
import { loadModel } from '../../../src/model/load-model';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import { smallDecoderMaxHidden } from '../../../src/model/runner/backends/choose-backend';
import { type F32Addon, type F32Simd, f32Addon } from '../../../src/model/runner/backends/native-f32';
import type { LoadedModel, ModelRunner, RunnerOptions, StepSequence } from '../../../src/model/types';
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { argmax, BlockAllocator, maxAbsDiff, withRunner as withRunnerOf } from '../../helpers/runner-driver';

const addon = f32Addon();
const maxHidden = smallDecoderMaxHidden(addon);
if (!addon) console.warn('\n*** SKIPPING the small-decoder tests: ortllm_f32 is not built ***\n');
else if (maxHidden === 0) console.warn(`\n*** SKIPPING the small-decoder runner tests: the runner takes that path with AVX2 or AVX-512 kernels, this CPU has ${addon.simd} ***\n`);
// The kernels run on any CPU (AVX-512, AVX2 or portable loops); the runner uses them with AVX2 or AVX-512.
const kernelDescribe = addon ? describe : describe.skip;
const addonDescribe = maxHidden > 0 ? describe : describe.skip;
const ORDER: F32Simd[] = ['portable', 'avx2', 'avx512'];
/** The kernel levels this CPU runs, the best last. */
const levels: F32Simd[] = addon ? ORDER.slice(0, ORDER.indexOf(addon.simd) + 1) : [];
const missingLevels = ORDER.filter((l) => !levels.includes(l));
if (addon && missingLevels.length) console.warn(`\n*** SKIPPING the small-decoder kernel tests at ${missingLevels.join(', ')}: this CPU runs up to ${addon.simd} ***\n`);

/** fn with the addon's kernels at `level`, then back at the CPU's best. */
function atLevel<T>(a: F32Addon, level: F32Simd, fn: () => T): T {
  expect(a.f32SetSimd(level)).toBe(level);
  try {
    return fn();
  } finally {
    a.f32SetSimd(a.simd);
  }
}

function seeded(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

const stories = sharedModel('stories260K.gguf');
const load = (path: string) => loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });

const withRunner = <T>(model: LoadedModel, extra: Partial<RunnerOptions>, fn: (r: ModelRunner) => Promise<T>): Promise<T> =>
  withRunnerOf(model, { blockSize: 8, numBlocks: 64, device: 'cpu', ...extra }, fn);

/** Two sequences: a prompt in two chunks, then decodes batched with the other's prefill; every step's logits. */
async function mixedSteps(runner: ModelRunner): Promise<Float32Array[]> {
  const blocks = new BlockAllocator(runner);
  const a = [1, 403, 407, 261, 378, 12, 99, 42, 6, 18, 300];
  const b = [1, 13, 200, 77, 5];
  const ta = blocks.table(a.length + 8);
  const tb = blocks.table(b.length + 8);
  const out: Float32Array[] = [];
  const run = async (batch: StepSequence[]) => {
    const r = await runner.step(batch);
    out.push(r.logits.slice());
    for (const rows of r.allLogits) if (rows) out.push(rows.slice());
  };
  await run([{ tokens: a.slice(0, 6), positionOffset: 0, blockTable: ta, allLogits: true }]);
  await run([
    { tokens: a.slice(6), positionOffset: 6, blockTable: ta },
    { tokens: b, positionOffset: 0, blockTable: tb },
  ]);
  for (let i = 0; i < 4; i++) {
    await run([
      { tokens: [20 + i], positionOffset: a.length + i, blockTable: ta },
      { tokens: [40 + i], positionOffset: b.length + i, blockTable: tb },
    ]);
  }
  return out;
}

/** x [m, k] W^T (W [n, k]) in float64. */
function matmulRef(x: ArrayLike<number>, w: ArrayLike<number>, m: number, n: number, k: number): Float64Array {
  const y = new Float64Array(m * n);
  for (let r = 0; r < m; r++)
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let i = 0; i < k; i++) sum += x[r * k + i] * w[j * k + i];
      y[r * n + j] = sum;
    }
  return y;
}

/** RMSNorm of each row of `x` [rows, h] times `weight`, in float64. */
function rmsNormRef(x: Float64Array, weight: ArrayLike<number>, h: number, eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / h; r++) {
    let sq = 0;
    for (let j = 0; j < h; j++) sq += x[r * h + j] ** 2;
    const inv = 1 / Math.sqrt(sq / h + eps);
    for (let j = 0; j < h; j++) out[r * h + j] = x[r * h + j] * inv * weight[j];
  }
  return out;
}

/** Rotate-half RoPE of each head of each row in place, at the row's position in the [positions, headDim / 2] tables. */
function ropeRef(v: Float64Array, positions: Int32Array, cos: Float32Array, sin: Float32Array, heads: number, headDim: number): void {
  const half = headDim / 2;
  positions.forEach((pos, r) => {
    for (let hd = 0; hd < heads; hd++) {
      const at = (r * heads + hd) * headDim;
      for (let i = 0; i < half; i++) {
        const [x1, x2, c, s] = [v[at + i], v[at + i + half], cos[pos * half + i], sin[pos * half + i]];
        v[at + i] = x1 * c - x2 * s;
        v[at + i + half] = x2 * c + x1 * s;
      }
    }
  });
}

/** The worst |got - want| / max(1, |want|). */
function worstRelative(got: ArrayLike<number>, want: ArrayLike<number>): number {
  expect(got.length).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Number.isNaN(got[i]) ? Infinity : Math.abs(got[i] - want[i]) / Math.max(1, Math.abs(want[i])));
  return worst;
}

/** The worst |got - want| over the largest |want| (at least 1): the error against the values' scale, for sums of many terms of mixed sign. */
function worstScaled(got: ArrayLike<number>, want: ArrayLike<number>): number {
  const scale = Math.max(1, ...Array.from(want, Math.abs));
  return maxAbsDiff(got, want) / scale;
}

interface QkvCase {
  m: number;
  h: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  rope: boolean;
}

/** f32Qkv on seeded inputs: its q, k, v and the inputs. */
function runQkv(a: F32Addon, c: QkvCase) {
  const qDim = c.heads * c.headDim;
  const kvDim = c.kvHeads * c.headDim;
  const normed = seeded(c.m * c.h, 11);
  const [wq, wk, wv] = [seeded(qDim * c.h, 12), seeded(kvDim * c.h, 13), seeded(kvDim * c.h, 14)];
  const tablePositions = c.m + 5;
  const positions = Int32Array.from({ length: c.m }, (_, r) => (r * 7 + 2) % tablePositions);
  const angle = (p: number, i: number) => p / 10000 ** ((2 * i) / c.headDim);
  const half = c.headDim / 2;
  const cos = Float32Array.from({ length: tablePositions * half }, (_, t) => Math.cos(angle(Math.floor(t / half), t % half)));
  const sin = Float32Array.from({ length: tablePositions * half }, (_, t) => Math.sin(angle(Math.floor(t / half), t % half)));
  const out = { q: new Float32Array(c.m * qDim).fill(NaN), k: new Float32Array(c.m * kvDim).fill(NaN), v: new Float32Array(c.m * kvDim).fill(NaN) };
  const packed = [a.f32Pack(wq, qDim, c.h), a.f32Pack(wk, kvDim, c.h), a.f32Pack(wv, kvDim, c.h)] as const;
  const dims = Int32Array.from([c.m, c.h, c.heads, c.kvHeads, c.headDim]);
  a.f32Qkv(normed, ...packed, out.q, out.k, out.v, c.rope ? positions : null, c.rope ? cos : null, c.rope ? sin : null, dims);
  return { ...out, normed, wq, wk, wv, positions, cos, sin };
}

interface MlpCase {
  m: number;
  h: number;
  qDim: number;
  inter: number;
}

/** f32Mlp on seeded inputs: the residual and normed it leaves, and the inputs. */
function runMlp(a: F32Addon, c: MlpCase) {
  const eps = 1e-5;
  const attn = seeded(c.m * c.qDim, 21);
  const residual = seeded(c.m * c.h, 22);
  const residualIn = residual.slice();
  const [wo, wGateUp, wDown] = [seeded(c.h * c.qDim, 23), seeded(2 * c.inter * c.h, 24).map((v) => 3 * v), seeded(c.h * c.inter, 25)];
  const post = seeded(c.h, 26);
  const next = seeded(c.h, 27);
  const normed = new Float32Array(c.m * c.h).fill(NaN);
  const dims = Int32Array.from([c.m, c.h, c.qDim, c.inter]);
  a.f32Mlp(attn, a.f32Pack(wo, c.h, c.qDim), residual, post, a.f32Pack(wGateUp, 2 * c.inter, c.h), a.f32Pack(wDown, c.h, c.inter), next, normed, dims, eps);
  return { residual, normed, residualIn, attn, wo, wGateUp, wDown, post, next, eps };
}

const QKV_CASES: [string, QkvCase][] = [
  ["stories260K's shape, prefill of 13", { m: 13, h: 64, heads: 8, kvHeads: 4, headDim: 8, rope: true }],
  ['odd sizes, 3 rows', { m: 3, h: 40, heads: 5, kvHeads: 1, headDim: 6, rope: true }],
  ['batch 7 without RoPE', { m: 7, h: 24, heads: 3, kvHeads: 3, headDim: 10, rope: false }],
];
const MLP_CASES: [string, MlpCase][] = [
  ["stories260K's shape, batch 1", { m: 1, h: 64, qDim: 64, inter: 172 }],
  ["stories260K's shape, prefill of 13", { m: 13, h: 64, qDim: 64, inter: 172 }],
  ['odd sizes, 7 rows', { m: 7, h: 40, qDim: 30, inter: 52 }],
];

kernelDescribe.each<F32Simd>(levels.length ? levels : ['portable'])('ortllm_f32 kernels at %s', (level) => {
  it.each([
    [1, 64, 64],
    [1, 17, 31],
    [3, 100, 64],
    [4, 512, 64],
    [7, 80, 64],
    [9, 344, 172],
    [13, 24, 9],
    [5, 1, 1],
  ])('f32Gemm %i x %i x %i matches a float64 reference', (m, n, k) => {
    const w = seeded(n * k, n + 7 * k);
    const x = seeded(m * k, m + 3);
    const y = new Float32Array(m * n).fill(Number.NaN);
    atLevel(addon!, level, () => addon!.f32Gemm(addon!.f32Pack(w, n, k), x, y, m, n, k));
    expect(worstRelative(y, matmulRef(x, w, m, n, k))).toBeLessThan(1e-5);
  });

  it.each(QKV_CASES)('f32Qkv (%s) matches a float64 reference', (_, c) => {
    const got = atLevel(addon!, level, () => runQkv(addon!, c));
    const want = {
      q: matmulRef(got.normed, got.wq, c.m, c.heads * c.headDim, c.h),
      k: matmulRef(got.normed, got.wk, c.m, c.kvHeads * c.headDim, c.h),
      v: matmulRef(got.normed, got.wv, c.m, c.kvHeads * c.headDim, c.h),
    };
    if (c.rope) {
      ropeRef(want.q, got.positions, got.cos, got.sin, c.heads, c.headDim);
      ropeRef(want.k, got.positions, got.cos, got.sin, c.kvHeads, c.headDim);
    }
    for (const name of ['q', 'k', 'v'] as const) expect(worstRelative(got[name], want[name])).toBeLessThan(1e-5);
  });

  it.each(MLP_CASES)('f32Mlp (%s) matches a float64 reference', (_, c) => {
    const got = atLevel(addon!, level, () => runMlp(addon!, c));
    const residual = Float64Array.from(got.residualIn);
    matmulRef(got.attn, got.wo, c.m, c.h, c.qDim).forEach((v, i) => (residual[i] += v));
    const normed = rmsNormRef(residual, got.post, c.h, got.eps);
    const gateUp = matmulRef(normed, got.wGateUp, c.m, 2 * c.inter, c.h);
    const act = new Float64Array(c.m * c.inter);
    for (let r = 0; r < c.m; r++)
      for (let j = 0; j < c.inter; j++) {
        const g = gateUp[r * 2 * c.inter + j];
        act[r * c.inter + j] = (g / (1 + Math.exp(-g))) * gateUp[r * 2 * c.inter + c.inter + j];
      }
    matmulRef(act, got.wDown, c.m, c.h, c.inter).forEach((v, i) => (residual[i] += v));
    expect(worstScaled(got.residual, residual)).toBeLessThan(1e-5);
    expect(worstScaled(got.normed, rmsNormRef(residual, got.next, c.h, got.eps))).toBeLessThan(1e-5);
  });

  it('refuses a packed weight of the wrong size', () => {
    const packed = addon!.f32Pack(seeded(64 * 64, 1), 64, 64);
    expect(() => addon!.f32Gemm(packed, new Float32Array(64), new Float32Array(32), 1, 32, 64)).toThrow(/packed must be f32Pack's output/);
  });
});

// Each output summed in k order with fused multiply-adds at every level, and the AVX2 and AVX-512
// SiLU on the same exp polynomial: the levels give the same floats (the portable SiLU calls
// std::exp, so its f32Mlp may differ in the last bits).
kernelDescribe('ortllm_f32 kernel levels agree', () => {
  const simdLevels = levels.filter((l) => l !== 'portable');
  const vsPortable = simdLevels.length > 0 ? it : it.skip;
  const avx2VsAvx512 = levels.includes('avx512') ? it : it.skip;
  if (!levels.includes('avx512')) console.warn('\n*** SKIPPING the AVX2 vs AVX-512 float equality test: this CPU has no AVX-512 ***\n');

  vsPortable(`f32Gemm and f32Qkv give the same floats at ${levels.join(', ')}`, () => {
    const w = seeded(344 * 64, 5);
    const x = seeded(9 * 64, 6);
    const gemmAt = (level: F32Simd) =>
      atLevel(addon!, level, () => {
        const y = new Float32Array(9 * 344);
        addon!.f32Gemm(addon!.f32Pack(w, 344, 64), x, y, 9, 344, 64);
        return y;
      });
    const qkvAt = (level: F32Simd) => atLevel(addon!, level, () => runQkv(addon!, QKV_CASES[1][1]));
    const [gemm0, qkv0] = [gemmAt('portable'), qkvAt('portable')];
    for (const level of simdLevels) {
      expect(gemmAt(level)).toEqual(gemm0);
      const qkv = qkvAt(level);
      for (const name of ['q', 'k', 'v'] as const) expect(qkv[name]).toEqual(qkv0[name]);
    }
  });

  avx2VsAvx512('f32Mlp gives the same floats at avx2 and avx512', () => {
    for (const [, c] of MLP_CASES) {
      const [avx2, avx512] = [atLevel(addon!, 'avx2', () => runMlp(addon!, c)), atLevel(addon!, 'avx512', () => runMlp(addon!, c))];
      expect(avx2.residual).toEqual(avx512.residual);
      expect(avx2.normed).toEqual(avx512.normed);
    }
  });

  it('f32SetSimd refuses an unknown level and clamps to the best this CPU runs', () => {
    expect(() => addon!.f32SetSimd('sse9' as F32Simd)).toThrow(/expected 'portable', 'avx2' or 'avx512'/);
    expect(addon!.f32SetSimd('avx512')).toBe(addon!.simd);
  });
});

addonDescribe('the small float32 path', () => {
  needs(stories).it('stories260K takes it, and its logits match onnxruntime segments (chunks, mixed batches, float32 and float16 KV)', async () => {
    const model = await load(stories);
    for (const kvCacheDtype of ['float32', 'float16'] as const) {
      const small = await withRunner(model, { kvCacheDtype }, async (r) => {
        expect((r as SegmentedRunner).backendName).toBe('native-f32');
        return mixedSteps(r);
      });
      const segments = await withRunner(model, { kvCacheDtype, smallDecoder: false }, async (r) => {
        expect((r as SegmentedRunner).backendName).toBe('onnx-segments');
        return mixedSteps(r);
      });
      expect(small.length).toBe(segments.length);
      small.forEach((logits, i) => expect(maxAbsDiff(logits, segments[i])).toBeLessThan(1e-3));
    }
  });

  needs(stories).it('stories260K decodes the same greedy tokens as onnxruntime segments', async () => {
    const model = await load(stories);
    const greedy = (extra: Partial<RunnerOptions>) =>
      withRunner(model, extra, async (runner) => {
        const prompt = [1, 403, 407, 261, 378];
        const table = new BlockAllocator(runner).table(prompt.length + 24);
        let r = await runner.step([{ tokens: prompt, positionOffset: 0, blockTable: table }]);
        const out: number[] = [];
        for (let i = 0; i < 24; i++) {
          out.push(argmax(r.logits));
          r = await runner.step([{ tokens: [out[i]], positionOffset: prompt.length + i, blockTable: table }]);
        }
        return out;
      });
    const small = await greedy({});
    expect(small).toEqual(await greedy({ smallDecoder: false }));
    expect(new Set(small).size).toBeGreaterThan(3);
  });

  it(`models wider than ${maxHidden} (this CPU's ${addon?.simd} limit) stay in onnxruntime segments`, async () => {
    const wide = randomModel(llamaConfig({ hiddenSize: 2 * maxHidden, intermediateSize: 64, numLayers: 1, numHeads: 4, numKvHeads: 2, vocabSize: 64 }));
    await withRunner(wide, {}, async (r) => expect((r as SegmentedRunner).backendName).toBe('onnx-segments'));
    const narrow = randomModel(llamaConfig({ hiddenSize: 32, intermediateSize: 48, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 64 }));
    await withRunner(narrow, {}, async (r) => expect((r as SegmentedRunner).backendName).toBe('native-f32'));
  });
});
