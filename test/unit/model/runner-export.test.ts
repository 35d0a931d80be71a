/** @jest-environment ./test/helpers/ort-environment.js */
// The ONNX-export runner (Optimum layout) on an export written from random weights, against
// the reference forward pass on the same weights.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import { LoadedModel, ModelRunner } from '../../../src/model/types';
import { referenceForward } from '../../helpers/reference-forward';
import { BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';
import { writeOnnxExport } from '../../helpers/write-onnx-export';

const config = llamaConfig({ numLayers: 2, tieWordEmbeddings: false });
const weightsModel = randomModel(config, 11);
let dir: string;
let runner: ModelRunner;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ortllm-export-'));
  const onnxPath = writeOnnxExport(dir, config, weightsModel.weights!);
  const exportModel: LoadedModel = { ...weightsModel, weights: null, onnxPath };
  runner = await createRunner(exportModel, { blockSize: 4, numBlocks: 32, device: 'cpu' });
});
afterAll(async () => {
  await runner?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const PROMPT = [1, 30, 60, 90, 120, 150, 180, 210, 240];

it('prefill, chunked prefill and token-by-token decoding all match the reference', async () => {
  const expected = referenceForward(config, weightsModel.weights!, PROMPT);
  const alloc = new BlockAllocator(runner);
  for (const chunk of [PROMPT.length, 4, 1]) {
    const got = await runChunked(runner, PROMPT, chunk, alloc.table(PROMPT.length));
    got.forEach((l, i) => expect(maxAbsDiff(l, expected[i])).toBeLessThan(1e-3));
  }
});

it('a batch of sequences at different positions gives each its own logits', async () => {
  const alloc = new BlockAllocator(runner);
  const a = alloc.table(PROMPT.length);
  const b = alloc.table(3);
  await runner.step([{ tokens: PROMPT.slice(0, -1), positionOffset: 0, blockTable: a }]);
  const r = await runner.step([
    { tokens: PROMPT.slice(-1), positionOffset: PROMPT.length - 1, blockTable: a },
    { tokens: [1, 2, 3], positionOffset: 0, blockTable: b, allLogits: true },
  ]);
  const v = config.vocabSize;
  expect(maxAbsDiff(r.logits.subarray(0, v), referenceForward(config, weightsModel.weights!, PROMPT).at(-1)!)).toBeLessThan(1e-3);
  const ref3 = referenceForward(config, weightsModel.weights!, [1, 2, 3]);
  expect(maxAbsDiff(r.allLogits[1]!, Float32Array.from(ref3.flatMap((x) => Array.from(x))))).toBeLessThan(1e-3);
  expect(r.allLogits[0]).toBeNull();
});

it('an export without the layers the config says fails with a clear message', async () => {
  const wrong: LoadedModel = { ...weightsModel, weights: null, config: { ...config, numLayers: 3 }, onnxPath: join(dir, 'onnx', 'model.onnx') };
  await expect(createRunner(wrong, { blockSize: 4, numBlocks: 4, device: 'cpu' })).rejects.toThrow(/lacks past_key_values\.2\.key/);
});
