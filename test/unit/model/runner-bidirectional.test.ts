/** @jest-environment ./test/helpers/ort-environment.js */
// StepSequence.bidirectionalRuns through the segmented runner on a seeded Gemma 3 text model:
// an image run's rows see each other both ways, on full and sliding layers (transformers'
// token_type_ids mask ORed with the causal, windowed one), in one prefill, in chunks that keep
// each run whole, and in passes that must not cut a run. Checked against the float64 reference
// with that mask; the same rows without runs match the causal reference and differ from this.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gemmaConfigJson, randomGemmaTensors, writeGemmaHfDir } from '../../../bench/random-gemma';
import { loadModel } from '../../../src/model/load-model';
import { createSegmentedRunner } from '../../../src/model/runner/segmented-runner';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { LoadedModel, ModelRunner, StepSequence } from '../../../src/model/types';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceGemmaForward } from '../../helpers/reference-gemma';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON, rowsRelativeDiff } from '../../helpers/runner-driver';

const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301, 5, 77, 260, 8, 9];
/** Two images: one longer than the sliding window (5), one that fits it but ends past it. */
const RUNS = [
  { offset: 3, length: 7 },
  { offset: 12, length: 3 },
];

type Json = Record<string, unknown>;

function imageRows(hidden: number): Map<number, Float32Array> {
  const rows = new Map<number, Float32Array>();
  for (const { offset, length } of RUNS) {
    for (let p = offset; p < offset + length; p++) rows.set(p, Float32Array.from({ length: hidden }, (_, i) => Math.sin(0.37 * p + 0.61 * i) * 0.8));
  }
  return rows;
}

/** Every position's logits, fed in steps that start at `cuts` (each run whole in one step). */
async function run(runner: ModelRunner, rows: Map<number, Float32Array>, cuts: number[], bidirectional: boolean): Promise<Float32Array[]> {
  const vocab = runner.config.vocabSize;
  const table = new BlockAllocator(runner).table(PROMPT.length);
  const out: Float32Array[] = [];
  const bounds = [...cuts, PROMPT.length];
  for (let c = 0; c + 1 < bounds.length; c++) {
    const [at, end] = [bounds[c], bounds[c + 1]];
    const step: StepSequence = { tokens: PROMPT.slice(at, end), positionOffset: at, blockTable: table, allLogits: true };
    const embeds = [...rows].filter(([p]) => p >= at && p < end).map(([p, data]) => ({ row: p - at, data }));
    if (embeds.length > 0) step.inputEmbeds = embeds;
    const runs = RUNS.filter((r) => r.offset >= at && r.offset + r.length <= end).map((r) => ({ row: r.offset - at, count: r.length }));
    if (bidirectional && runs.length > 0) step.bidirectionalRuns = runs;
    const all = (await runner.step([step])).allLogits[0]!;
    for (let i = 0; i < end - at; i++) out.push(all.slice(i * vocab, (i + 1) * vocab));
  }
  return out;
}


needs(NATIVE_ADDON).describe('bidirectional image runs in the segmented runner (gemma3)', () => {
  let tmp: string;
  let json: Json;
  let tensors: Map<string, Float32Array>;
  let model: LoadedModel;
  let rows: Map<number, Float32Array>;
  let want: Float64Array[];

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-bidi-'));
    json = gemmaConfigJson('gemma3');
    tensors = randomGemmaTensors(json, 23);
    await writeGemmaHfDir(tmp, json, tensors);
    model = await loadModel(loadOptions(tmp, { skipTokenizer: true }));
    rows = imageRows(model.config.hiddenSize);
    want = referenceGemmaForward(json, tensors, PROMPT, rows, RUNS);
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  const runner = (maxPassRows?: number) =>
    createSegmentedRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', ...(maxPassRows ? { maxPassRows } : {}) }, nativeKernels()!, () => {});

  it.each([
    ['one prefill', [0], undefined],
    ['chunks that keep each run whole', [0, 3, 10, 11, 15, 17], undefined],
    ['passes of 8 rows (a run opens the next pass)', [0], 8],
  ])('matches the reference with the image mask: %s', async (_name, cuts, maxPassRows) => {
    const r = await runner(maxPassRows);
    try {
      expect(rowsRelativeDiff(await run(r, rows, cuts, true), want)).toBeLessThan(1e-4);
    } finally {
      await r.dispose();
    }
  });

  it('without runs stays causal (the reference without the mask), and the mask changes the logits', async () => {
    const causal = referenceGemmaForward(json, tensors, PROMPT, rows);
    const r = await runner();
    try {
      const got = await run(r, rows, [0], false);
      expect(rowsRelativeDiff(got, causal)).toBeLessThan(1e-4);
      expect(maxAbsDiff(got[RUNS[0].offset], want[RUNS[0].offset])).toBeGreaterThan(1e-3);
    } finally {
      await r.dispose();
    }
  });

  it('refuses a run that does not lie within its step, and one longer than a pass', async () => {
    const r = await runner(4);
    try {
      const table = new BlockAllocator(r).table(8);
      await expect(r.step([{ tokens: [1, 2, 3], positionOffset: 0, blockTable: table, bidirectionalRuns: [{ row: 1, count: 3 }] }])).rejects.toThrow(/within/);
      await expect(r.step([{ tokens: [1, 2, 3, 4, 5, 6], positionOffset: 0, blockTable: table, bidirectionalRuns: [{ row: 0, count: 5 }] }])).rejects.toThrow(/does not fit a pass/);
    } finally {
      await r.dispose();
    }
  });
});
