/** @jest-environment ./test/helpers/ort-environment.js */
// The small float32 decoder path (runner/small-decoder.ts, native/src/f32-decoder.cc): the addon's
// GEMM against a float64 reference written here, and the runner on stories260K against the same
// model in onnxruntime segments (prefill chunks, mixed batches, float16 KV, greedy decoding; the
// logits within graph-gguf.test.ts's bar against the reference forward pass, 1e-3), and
// which models the size policy gives it.
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import { f32Addon, SMALL_DECODER_MAX_HIDDEN } from '../../../src/model/runner/small-decoder';
import type { LoadedModel, ModelRunner, RunnerOptions, StepSequence } from '../../../src/model/types';
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { argmax, BlockAllocator, maxAbsDiff } from '../../helpers/runner-driver';

const addon = f32Addon();
if (!addon) console.warn('\n*** SKIPPING the small-decoder tests: ortllm_f32 is not built ***\n');
else if (!addon.avx512) console.warn('\n*** SKIPPING the small-decoder runner tests: the runner takes that path on AVX-512 CPUs only ***\n');
// The kernels run on any CPU (AVX-512 or portable loops); the runner uses them only with AVX-512.
const kernelDescribe = addon ? describe : describe.skip;
const addonDescribe = addon?.avx512 ? describe : describe.skip;

function seeded(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

const stories = sharedModel('stories260K.gguf');
const load = (path: string) => loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });

async function withRunner<T>(model: LoadedModel, extra: Partial<RunnerOptions>, fn: (r: ModelRunner) => Promise<T>): Promise<T> {
  const runner = await createRunner(model, { blockSize: 8, numBlocks: 64, device: 'cpu', ...extra });
  try {
    return await fn(runner);
  } finally {
    await runner.dispose();
  }
}

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

kernelDescribe(`f32Gemm (${addon?.avx512 ? 'AVX-512' : 'portable'})`, () => {
  it.each([
    [1, 64, 64],
    [1, 17, 31],
    [3, 100, 64],
    [4, 512, 64],
    [9, 344, 172],
    [5, 1, 1],
  ])('%i x %i x %i matches a float64 reference', (m, n, k) => {
    const w = seeded(n * k, n + 7 * k);
    const x = seeded(m * k, m + 3);
    const y = new Float32Array(m * n).fill(Number.NaN);
    addon!.f32Gemm(addon!.f32Pack(w, n, k), x, y, m, n, k);
    let worst = 0;
    for (let r = 0; r < m; r++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let i = 0; i < k; i++) sum += x[r * k + i] * w[j * k + i];
        worst = Math.max(worst, Math.abs(y[r * n + j] - sum) / Math.max(1, Math.abs(sum)));
      }
    }
    expect(worst).toBeLessThan(1e-5);
  });

  it('refuses a packed weight of the wrong size', () => {
    const packed = addon!.f32Pack(seeded(64 * 64, 1), 64, 64);
    expect(() => addon!.f32Gemm(packed, new Float32Array(64), new Float32Array(32), 1, 32, 64)).toThrow(/packed must be f32Pack's output/);
  });
});

addonDescribe('the small float32 path', () => {
  needs(stories).it('stories260K takes it, and its logits match onnxruntime segments (chunks, mixed batches, float32 and float16 KV)', async () => {
    const model = await load(stories);
    for (const kvCacheDtype of ['float32', 'float16'] as const) {
      const small = await withRunner(model, { kvCacheDtype }, async (r) => {
        expect((r as SegmentedRunner).path).toBe('small-f32');
        return mixedSteps(r);
      });
      const segments = await withRunner(model, { kvCacheDtype, smallDecoder: false }, async (r) => {
        expect((r as SegmentedRunner).path).toBe('segments');
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

  it(`models wider than ${SMALL_DECODER_MAX_HIDDEN} stay in onnxruntime segments`, async () => {
    const wide = randomModel(llamaConfig({ hiddenSize: 2 * SMALL_DECODER_MAX_HIDDEN, intermediateSize: 64, numLayers: 1, numHeads: 4, numKvHeads: 2, vocabSize: 64 }));
    await withRunner(wide, {}, async (r) => expect((r as SegmentedRunner).path).toBe('segments'));
    const narrow = randomModel(llamaConfig({ hiddenSize: 32, intermediateSize: 48, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 64 }));
    await withRunner(narrow, {}, async (r) => expect((r as SegmentedRunner).path).toBe('small-f32'));
  });
});
