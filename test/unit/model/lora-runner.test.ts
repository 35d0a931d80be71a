/** @jest-environment ./test/helpers/ort-environment.js */
// LoRA in the segmented runner, on each backend (native-f32, onnx-segments, native-q8) over seeded
// random models and seeded adapters of rank 8 and 16 adapting all seven linears (alpha != rank):
// a sequence run with an adapter against the model with the adapter merged into its weights; one
// step mixing three adapters' rows and the base model's (prefill chunks and decodes) against each
// sequence run alone; and a step without adapter rows against the runner built without LoRA.
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { LoadedModel, ModelRunner, RunnerOptions } from '../../../src/model/types';
import { randomAdapter } from '../../../bench/random-lora';
import { driveSequences, mergedModel, type DrivenSequence } from '../../helpers/lora-fixtures';
import { referenceForward } from '../../helpers/reference-forward';
import { maxAbsDiff, NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';
import { LoraSlots } from '../../../src/model/runner/lora-slots';

const LORA = { maxLoras: 3, maxRank: 16 };

async function withRunner<T>(model: LoadedModel, extra: Partial<RunnerOptions>, fn: (r: ModelRunner) => Promise<T>): Promise<T> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 96, device: 'cpu', ...extra });
  try {
    return await fn(runner);
  } finally {
    await runner.dispose();
  }
}

const maxDiff = (a: Float32Array[], b: Float32Array[]) => Math.max(...a.map((row, i) => maxAbsDiff(row, b[i])));

/** One sequence: a prompt in two chunks, then two decodes. */
const single = (lora: number): DrivenSequence[] => [{ tokens: [1, 40, 300, 77, 5, 12, 99, 201, 8, 64], lora, chunks: [6, 2, 1, 1], start: 0 }];

/** Three adapters' sequences and a base one, started in two waves: steps hold prefill chunks and decodes of several adapters. */
const mixed: DrivenSequence[] = [
  { tokens: [1, 40, 300, 77, 5, 12, 99, 201, 8, 64], lora: 1, chunks: [6, 2, 1, 1], start: 0 },
  { tokens: [1, 13, 200, 77, 5, 6, 7], lora: 2, chunks: [4, 1, 1, 1], start: 0 },
  { tokens: [1, 2, 3, 4, 5, 6], lora: 0, chunks: [3, 1, 1, 1], start: 1 },
  { tokens: [1, 500, 400, 300, 200, 100, 50, 25], lora: 3, chunks: [5, 1, 1, 1], start: 1 },
];

const hidden64 = llamaConfig({ intermediateSize: 192 });
const adapters = [randomAdapter(hidden64, 16, 24, 11), randomAdapter(hidden64, 8, 16, 12), randomAdapter(hidden64, 8, 4, 13)];

interface BackendCase {
  backend: string;
  model: () => LoadedModel;
  options: Partial<RunnerOptions>;
  /** The bar for the adapter against the merged model, and for mixed against alone. */
  mergedTolerance: number;
  mixedTolerance: number;
}

const f32Model = () => randomModel(hidden64, 3);
const cases: BackendCase[] = [
  // Float32 GEMMs both sides; the merged weights differ from W + b·a by one float32 rounding. Base
  // rows in a pass with adapter rows take the unfused calls, whose RoPE and norms round apart from
  // the fused ones by ~1e-5.
  { backend: 'native-f32', model: f32Model, options: {}, mergedTolerance: 2e-4, mixedTolerance: 5e-5 },
  // MLAS's GEMMs sum in an order that depends on the row count: a row's floats differ by ~1e-5 between a pass of 4 rows and of 20.
  { backend: 'onnx-segments', model: f32Model, options: { smallDecoder: false }, mergedTolerance: 2e-4, mixedTolerance: 1e-4 },
];

async function withAdapters<T>(model: LoadedModel, options: Partial<RunnerOptions>, fn: (r: ModelRunner) => Promise<T>): Promise<T> {
  return withRunner(model, { ...options, lora: LORA }, async (runner) => {
    adapters.forEach((a, i) => runner.loras!.add(i + 1, a));
    return fn(runner);
  });
}

needs(NATIVE_ADDON).describe('LoRA in the segmented runner', () => {
  describe.each(cases)('$backend', ({ backend, model, options, mergedTolerance, mixedTolerance }) => {
    it('runs the expected backend', async () => {
      await withRunner(model(), { ...options, lora: LORA }, async (r) => expect((r as SegmentedRunner).backendName).toBe(backend));
    });

    it('a sequence with an adapter gives the logits of the model with the adapter merged', async () => {
      const base = model();
      const adapted = await withAdapters(base, options, (r) => driveSequences(r, single(1), false));
      const merged = await withRunner(mergedModel(base, adapters[0]), options, (r) => driveSequences(r, single(0), false));
      const plain = await withRunner(base, options, (r) => driveSequences(r, single(0), false));
      expect(maxDiff(adapted[0], merged[0])).toBeLessThan(mergedTolerance);
      // The adapter moves the logits far more than the bar: the comparison can fail.
      expect(maxDiff(adapted[0], plain[0])).toBeGreaterThan(0.1);
    });

    it('one step mixing three adapters and the base model equals each sequence run alone', async () => {
      const together = await withAdapters(model(), options, (r) => driveSequences(r, mixed, false));
      const alone = await withAdapters(model(), options, (r) => driveSequences(r, mixed, true));
      together.forEach((logits, i) => expect(maxDiff(logits, alone[i])).toBeLessThan(mixedTolerance));
    });

    it('a step split into passes gives each pass its own rows\' adapters', async () => {
      const passes = { ...options, maxPassRows: 5 } as Partial<RunnerOptions>;
      const split = await withAdapters(model(), passes, (r) => driveSequences(r, mixed, false));
      const alone = await withAdapters(model(), options, (r) => driveSequences(r, mixed, true));
      split.forEach((logits, i) => expect(maxDiff(logits, alone[i])).toBeLessThan(mixedTolerance));
    });

    it('a step without adapter rows equals the runner built without LoRA', async () => {
      const withLora = await withAdapters(model(), options, (r) => driveSequences(r, mixed.map((s) => ({ ...s, lora: 0 })), false));
      const without = await withRunner(model(), options, (r) => driveSequences(r, mixed.map((s) => ({ ...s, lora: 0 })), false));
      withLora.forEach((logits, i) => expect(maxDiff(logits, without[i])).toBe(0));
    });
  });

  describe('native-q8', () => {
    const q8Model = () => quantizedQ8(randomModel({ ...hidden64, tieWordEmbeddings: false }, 5));
    const options: Partial<RunnerOptions> = {};

    it('runs native-q8', async () => {
      await withRunner(q8Model(), { lora: LORA }, async (r) => expect((r as SegmentedRunner).backendName).toBe('native-q8'));
    });

    it('a sequence with an adapter is as close to the float64 forward of the merged dequantized weights as the base model is to its own', async () => {
      const base = q8Model();
      const tokens = single(1)[0].tokens;
      const adapted = await withAdapters(base, options, (r) => driveSequences(r, single(1), false));
      const plain = await withRunner(base, options, (r) => driveSequences(r, single(0), false));
      const baseError = maxDiff(plain[0], referenceForward(base.config, base.weights!, tokens));
      const error = maxDiff(adapted[0], referenceForward(base.config, mergedModel(base, adapters[0]).weights!, tokens));
      // The int8 activations' rounding bounds both; the adapter's products in float32 add nothing of note.
      expect(error).toBeLessThan(Math.max(3 * baseError, 2e-2));
      expect(maxDiff(adapted[0], plain[0])).toBeGreaterThan(0.1);
    });

    it('one step mixing three adapters and the base model equals each sequence run alone', async () => {
      const together = await withAdapters(q8Model(), options, (r) => driveSequences(r, mixed, false));
      const alone = await withAdapters(q8Model(), options, (r) => driveSequences(r, mixed, true));
      together.forEach((logits, i) => expect(maxDiff(logits, alone[i])).toBeLessThan(1e-5));
    });

    it('a step without adapter rows equals the runner built without LoRA', async () => {
      const base = mixed.map((s) => ({ ...s, lora: 0 }));
      const withLora = await withAdapters(q8Model(), options, (r) => driveSequences(r, base, false));
      const without = await withRunner(q8Model(), options, (r) => driveSequences(r, base, false));
      withLora.forEach((logits, i) => expect(maxDiff(logits, without[i])).toBe(0));
    });
  });
});

describe('LoraSlots', () => {
  const seq = (lora: number) => ({ tokens: [1, 2], positionOffset: 0, blockTable: [0], lora });
  const slots = () => {
    const s = new LoraSlots(hidden64, 2, 16);
    adapters.forEach((a, i) => s.add(i + 1, a));
    return s;
  };

  it('gives each row its adapter\'s slot and base rows -1, and no lora to a pass of base rows', () => {
    const s = slots();
    const lora = s.passLora([seq(2), seq(0), seq(1)])!;
    expect(lora.slots).toEqual([adapters[1], adapters[0]]);
    expect([...lora.rowSlot]).toEqual([0, 0, -1, -1, 1, 1]);
    expect(s.passLora([seq(0)])).toBeUndefined();
  });

  it('keeps a running adapter in its slot and gives a new one a slot no adapter of the pass holds', () => {
    const s = slots();
    s.passLora([seq(1), seq(2)]);
    const next = s.passLora([seq(3), seq(2)])!;
    expect(next.slots).toEqual([adapters[2], adapters[1]]);
    expect([...next.rowSlot]).toEqual([0, 0, 1, 1]);
    s.remove(3);
    expect(s.passLora([seq(1)])!.slots).toEqual([adapters[0], adapters[1]]);
  });

  it('refuses more adapters than max_loras in a pass, an unknown id, and adapters that do not fit', () => {
    const s = slots();
    expect(() => s.passLora([seq(1), seq(2), seq(3)])).toThrow(/names 3 LoRA adapters, more than max_loras \(2\)/);
    expect(() => s.passLora([seq(9)])).toThrow(/LoRA adapter 9 is not loaded/);
    expect(() => new LoraSlots(hidden64, 2, 8).add(1, adapters[0])).toThrow(/rank 16 is greater than max_lora_rank 8/);
    expect(() => s.add(4, randomAdapter(llamaConfig({ intermediateSize: 192, numLayers: 3 }), 8, 16, 1))).toThrow(/3 layers, the model 2/);
    expect(() => s.add(0, adapters[0])).toThrow(/positive integer/);
  });
});

describe('runners without per-row LoRA', () => {
  it('the in-graph attention runner refuses RunnerOptions.lora, saying why', async () => {
    await expect(createRunner(randomModel(hidden64, 3), { blockSize: 4, numBlocks: 8, device: 'cpu', attention: 'graph', lora: LORA })).rejects.toThrow(
      /LoRA adapters run only on the segmented runner.*graph runner \(its linears and attention are one graph: attention runs inside the graph\)/,
    );
  });

  it('a runner built without LoRA refuses a sequence naming an adapter', async () => {
    await withRunner(randomModel(hidden64, 3), {}, async (r) => {
      await expect(r.step([{ tokens: [1], positionOffset: 0, blockTable: [0], lora: 1 }])).rejects.toThrow(/built without LoRA/);
    });
  });
});
