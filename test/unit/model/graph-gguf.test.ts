/** @jest-environment ./test/helpers/ort-environment.js */
// The runner on the real GGUF fixtures (../shared/models) against the reference forward pass:
// f32 files, quantized files (MatMulNBits vs the reference on dequantized weights), the
// safetensors directory of the same model, and greedy decoding of Q8_0 vs F32.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDecoderGraph } from '../../../src/model/graph/decoder-graph';
import { loadModel } from '../../../src/model/load-model';
import { AccuracyLevel } from '../../../src/model/graph/matmul-nbits';
import { createRunner } from '../../../src/model/runner';
import { createGraphRunner } from '../../../src/model/runner/graph-runner';
import { DecoderArchConfig, LoadedModel, ModelRunner } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceForward } from '../../helpers/reference-forward';
import { argmax, BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';
import { writeHfDirFromGguf } from '../../helpers/write-hf-dir';

const PROMPTS = [
  [1, 403, 407, 261, 378],
  [1, 13, 200, 77, 5, 300, 301, 12, 99, 42, 6, 18],
  [1],
];

const load = (path: string) =>
  loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });

async function withRunner<T>(model: LoadedModel, fn: (r: ModelRunner) => Promise<T>, accuracy?: AccuracyLevel): Promise<T> {
  const options = { blockSize: 8, numBlocks: 32, device: 'cpu' } as const;
  const runner = accuracy === undefined ? await createRunner(model, options) : await createGraphRunner(model, { ...options, quantAccuracyLevel: accuracy });
  try {
    return await fn(runner);
  } finally {
    await runner.dispose();
  }
}

/** Largest |runner - reference| over every position of every prompt. */
async function worstDiff(model: LoadedModel, accuracy?: AccuracyLevel): Promise<{ diff: number; scale: number }> {
  return withRunner(model, async (runner) => {
    let scale = 0;
    let worst = 0;
    for (const prompt of PROMPTS) {
      const expected = referenceForward(model.config, model.weights!, prompt);
      const got = await runChunked(runner, prompt, prompt.length, new BlockAllocator(runner).table(prompt.length));
      got.forEach((g, i) => {
        worst = Math.max(worst, maxAbsDiff(g, expected[i]));
        scale = Math.max(scale, ...Array.from(expected[i], Math.abs));
      });
    }
    return { diff: worst, scale };
  }, accuracy);
}

async function greedy(model: LoadedModel, prompt: number[], steps: number): Promise<number[]> {
  return withRunner(model, async (runner) => {
    const table = new BlockAllocator(runner).table(prompt.length + steps);
    let r = await runner.step([{ tokens: prompt, positionOffset: 0, blockTable: table }]);
    const out: number[] = [];
    for (let i = 0; i < steps; i++) {
      out.push(argmax(r.logits));
      r = await runner.step([{ tokens: [out[i]], positionOffset: prompt.length + i, blockTable: table }]);
    }
    return out;
  });
}

describe.each(['stories260K.gguf', 'rand256.gguf'])('%s (f32)', (file) => {
  const path = sharedModel(file);
  needs(path).it('logits match the reference forward pass (max abs diff < 1e-3)', async () => {
    expect((await worstDiff(await load(path))).diff).toBeLessThan(1e-3);
  });
});

describe.each(['rand256-Q8_0.gguf', 'rand256-Q4_0.gguf', 'rand256-Q6_K.gguf', 'rand256-Q4_K_M.gguf', 'stories260K-Q8_0.gguf', 'stories260K-Q4_0.gguf'])(
  '%s (quantized)',
  (file) => {
    const path = sharedModel(file);
    needs(path).it('runs its linear layers as MatMulNBits: exact with f32 activations, close with the default levels', async () => {
      const model = await load(path);
      const quantized = model.weights!.names().filter((n) => model.weights!.get(n).kind === 'quantized');
      expect(quantized.length).toBeGreaterThan(0);
      const built = buildDecoderGraph(model.config as DecoderArchConfig, model.weights!, { maxPositions: 64, blockSize: 8, keepQuantized: true });
      expect(Buffer.from(built.modelBytes).toString('latin1')).toContain('MatMulNBits');
      // accuracy_level 0: MatMulNBits reproduces the GGML blocks exactly; only summation order differs.
    expect((await worstDiff(model, 0)).diff).toBeLessThan(1e-4);
    // default levels quantize activations to int8 for most formats (as llama.cpp does): ~1% of the logit scale
    const auto = await worstDiff(model);
    expect(auto.diff / auto.scale).toBeLessThan(2e-2);
    });
  },
);

const stories = sharedModel('stories260K.gguf');
const storiesQ8 = sharedModel('stories260K-Q8_0.gguf');
needs(stories, storiesQ8).it('stories260K Q8_0 gives the same greedy tokens as F32', async () => {
  const prompt = PROMPTS[0];
  const f32 = await greedy(await load(stories), prompt, 12);
  const q8 = await greedy(await load(storiesQ8), prompt, 12);
  expect(q8).toEqual(f32);
  expect(new Set(f32).size).toBeGreaterThan(3); // a real continuation, not one repeated token
});

needs(stories).it('the safetensors directory of stories260K gives the same logits as the GGUF', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-hf-'));
  try {
    await writeHfDirFromGguf(stories, dir);
    const fromGguf = await load(stories);
    const fromHf = await load(dir);
    const prompt = PROMPTS[1];
    const run = (m: LoadedModel) => withRunner(m, (r) => runChunked(r, prompt, prompt.length, new BlockAllocator(r).table(prompt.length)));
    const [a, b] = [await run(fromGguf), await run(fromHf)];
    a.forEach((l, i) => expect(maxAbsDiff(l, b[i])).toBeLessThan(1e-5));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
