/** @jest-environment ./test/helpers/ort-environment.js */
// StepSequence.inputEmbeds through the segmented runner: the given rows replace their tokens'
// embeddings, after Gemma's sqrt(hidden) scale (image rows are not scaled, as in transformers),
// in one prefill, in chunks, and in passes of fewer rows than the step. Checked against the
// float64 references fed the same vectors at the same positions.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gemmaConfigJson, randomGemmaTensors, writeGemmaHfDir } from '../../../bench/random-gemma';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import { createSegmentedRunner } from '../../../src/model/runner/segmented-runner';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { LoadedModel, ModelRunner, StepSequence } from '../../../src/model/types';
import { loadStories } from '../engine/engine-fixtures';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceGemmaForward } from '../../helpers/reference-gemma';
import { referenceForward } from '../../helpers/reference-forward';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON, rowsRelativeDiff } from '../../helpers/runner-driver';

const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301, 5, 77, 260];
/** Positions 4..9 take given rows (an image's run). */
const IMAGE_AT = 4;
const IMAGE_ROWS = 6;

function imageRows(hidden: number, seed: number): Float32Array {
  return Float32Array.from({ length: IMAGE_ROWS * hidden }, (_, i) => Math.sin(seed + 0.61 * i) * 0.8);
}

function rowMap(rows: Float32Array, hidden: number): Map<number, Float32Array> {
  return new Map(Array.from({ length: IMAGE_ROWS }, (_, r) => [IMAGE_AT + r, rows.subarray(r * hidden, (r + 1) * hidden)]));
}

/** Every position's logits, fed in chunks of `chunk`, each chunk's image rows as inputEmbeds. */
async function runWithRows(runner: ModelRunner, rows: Float32Array, chunk: number): Promise<Float32Array[]> {
  const hidden = runner.config.hiddenSize;
  const vocab = runner.config.vocabSize;
  const table = new BlockAllocator(runner).table(PROMPT.length);
  const out: Float32Array[] = [];
  for (let at = 0; at < PROMPT.length; at += chunk) {
    const end = Math.min(at + chunk, PROMPT.length);
    const step: StepSequence = { tokens: PROMPT.slice(at, end), positionOffset: at, blockTable: table, allLogits: true };
    const from = Math.max(at, IMAGE_AT);
    const to = Math.min(end, IMAGE_AT + IMAGE_ROWS);
    if (from < to) step.inputEmbeds = [{ row: from - at, data: rows.subarray((from - IMAGE_AT) * hidden, (to - IMAGE_AT) * hidden) }];
    const result = await runner.step([step]);
    const all = result.allLogits[0]!;
    for (let i = 0; i < end - at; i++) out.push(all.slice(i * vocab, (i + 1) * vocab));
  }
  return out;
}


needs(NATIVE_ADDON).describe('input embeddings in the segmented runner', () => {
  describe('llama (stories260K)', () => {
    let model: LoadedModel;
    beforeAll(async () => (model = await loadStories()));

    it.each([
      ['one prefill', PROMPT.length],
      ['chunks that cut the image run', 3],
      ['decode steps', 1],
    ])('matches the reference fed the same rows: %s', async (_name, chunk) => {
      const hidden = model.config.hiddenSize;
      const rows = imageRows(hidden, 3);
      const want = referenceForward(model.config, model.weights!, PROMPT, undefined, rowMap(rows, hidden));
      const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu' });
      try {
        expect(rowsRelativeDiff(await runWithRows(runner, rows, chunk), want)).toBeLessThan(1e-4);
      } finally {
        await runner.dispose();
      }
    });

    it('the rows matter: other rows give other logits than the token embeddings', async () => {
      const hidden = model.config.hiddenSize;
      const plain = referenceForward(model.config, model.weights!, PROMPT);
      const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu' });
      try {
        const got = await runWithRows(runner, imageRows(hidden, 3), PROMPT.length);
        expect(maxAbsDiff(got[IMAGE_AT + 1], plain[IMAGE_AT + 1])).toBeGreaterThan(1e-2);
      } finally {
        await runner.dispose();
      }
    });

    it('keeps each row with its token when a step runs as passes of fewer rows', async () => {
      const hidden = model.config.hiddenSize;
      const rows = imageRows(hidden, 5);
      const want = referenceForward(model.config, model.weights!, PROMPT, undefined, rowMap(rows, hidden));
      const runner = await createSegmentedRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', maxPassRows: 5 }, nativeKernels()!, () => {});
      try {
        expect(rowsRelativeDiff(await runWithRows(runner, rows, PROMPT.length), want)).toBeLessThan(1e-4);
      } finally {
        await runner.dispose();
      }
    });

    it('refuses M-RoPE positions it cannot apply, and rows that do not fit', async () => {
      const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu' });
      try {
        const table = new BlockAllocator(runner).table(4);
        await expect(runner.step([{ tokens: [1, 2], positionOffset: 0, blockTable: table, ropePositions: new Int32Array(6) }])).rejects.toThrow(/M-RoPE/);
        const data = new Float32Array(3 * model.config.hiddenSize);
        await expect(runner.step([{ tokens: [1, 2], positionOffset: 0, blockTable: table, inputEmbeds: [{ row: 0, data }] }])).rejects.toThrow(/do not fit/);
      } finally {
        await runner.dispose();
      }
    });
  });

  describe('gemma3: image rows are not scaled by sqrt(hidden)', () => {
    let tmp: string;
    beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-embeds-'))));
    afterAll(() => rmSync(tmp, { recursive: true, force: true }));

    it('matches the reference that scales token rows only', async () => {
      const json = gemmaConfigJson('gemma3');
      const tensors = randomGemmaTensors(json, 11);
      await writeGemmaHfDir(tmp, json, tensors);
      const model = await loadModel(loadOptions(tmp, { skipTokenizer: true }));
      const hidden = model.config.hiddenSize;
      const rows = imageRows(hidden, 9);
      const want = referenceGemmaForward(json, tensors, PROMPT, rowMap(rows, hidden));
      const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu' });
      try {
        expect(rowsRelativeDiff(await runWithRows(runner, rows, 5), want)).toBeLessThan(1e-4);
      } finally {
        await runner.dispose();
      }
    });
  });
});
