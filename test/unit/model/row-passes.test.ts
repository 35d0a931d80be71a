/** @jest-environment ./test/helpers/ort-environment.js */
// A step larger than a pass runs as several passes through the layers: the split keeps every
// token once, in order, at its position, and the segmented runner's logits (last and all) match
// a runner that takes the whole step in one pass.
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { joinPasses, splitRows } from '../../../src/model/runner/row-passes';
import { createSegmentedRunner, type SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { StepSequence } from '../../../src/model/types';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';

describe('splitRows / joinPasses', () => {
  const batch: StepSequence[] = [
    { tokens: [1, 2, 3, 4, 5, 6, 7], positionOffset: 0, blockTable: [0, 1] },
    { tokens: [8], positionOffset: 9, blockTable: [2, 3, 4] },
    { tokens: [9, 10, 11], positionOffset: 2, blockTable: [5], allLogits: true },
  ];

  it('cuts sequences at pass boundaries, advancing their positions', () => {
    const passes = splitRows(batch, 4);
    expect(passes.map((p) => p.batch.map((s) => [s.tokens, s.positionOffset]))).toEqual([
      [[[1, 2, 3, 4], 0]],
      [
        [[5, 6, 7], 4],
        [[8], 9],
      ],
      [[[9, 10, 11], 2]],
    ]);
    expect(passes.map((p) => p.pieces)).toEqual([[{ seq: 0, last: false }], [{ seq: 0, last: true }, { seq: 1, last: true }], [{ seq: 2, last: true }]]);
    expect(passes[2].batch[0].allLogits).toBe(true);
    expect(passes[1].batch[1].blockTable).toEqual([2, 3, 4]);
    expect(splitRows(batch, 100)).toHaveLength(1);
    expect(() => splitRows(batch, 0)).toThrow(/maxRows must be a positive integer/);
  });

  it("joins each sequence's last logits and its all-logits rows in order", () => {
    const vocab = 2;
    const passes = splitRows(batch, 2);
    // Each piece's logits rows hold [seq, position of the row].
    const results = passes.map((p) => ({
      logits: Float32Array.from(p.batch.flatMap((s, i) => [p.pieces[i].seq, s.positionOffset + s.tokens.length - 1])),
      allLogits: p.batch.map((s, i) => (s.allLogits ? Float32Array.from(s.tokens.flatMap((_, t) => [p.pieces[i].seq, s.positionOffset + t])) : null)),
    }));
    const joined = joinPasses(batch, passes, results, vocab);
    expect([...joined.logits]).toEqual([0, 6, 1, 9, 2, 4]);
    expect(joined.allLogits[0]).toBeNull();
    expect([...joined.allLogits[2]!]).toEqual([2, 2, 2, 3, 2, 4]);
  });
});

needs(NATIVE_ADDON).describe('segmented runner in passes', () => {
  const config = llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2 });
  const model = randomModel(config, 5);
  const options = { blockSize: 4, numBlocks: 64, device: 'cpu' as const, intraOpThreads: 1 };
  let whole: SegmentedRunner;
  let inPasses: SegmentedRunner;
  beforeAll(async () => {
    whole = await createSegmentedRunner(model, options, nativeKernels()!);
    inPasses = await createSegmentedRunner(model, { ...options, maxPassRows: 5 }, nativeKernels()!);
  });
  afterAll(async () => {
    await whole?.dispose();
    await inPasses?.dispose();
  });

  it('gives the logits of one pass, for prefills cut across passes and decodes after them', async () => {
    const prompts = [Array.from({ length: 13 }, (_, i) => (i * 37 + 3) % config.vocabSize), [1, 2], Array.from({ length: 9 }, (_, i) => (i * 11 + 7) % config.vocabSize)];
    const run = async (runner: SegmentedRunner) => {
      const alloc = new BlockAllocator(runner);
      const tables = prompts.map((p) => alloc.table(p.length + 1));
      const prefill = await runner.step(prompts.map((p, i) => ({ tokens: p, positionOffset: 0, blockTable: tables[i], allLogits: i === 0 })));
      const decode = await runner.step(prompts.map((p, i) => ({ tokens: [i + 5], positionOffset: p.length, blockTable: tables[i] })));
      return { prefill, decode };
    };
    const a = await run(inPasses);
    const b = await run(whole);
    expect(maxAbsDiff(a.prefill.logits, b.prefill.logits)).toBeLessThan(1e-4);
    expect(a.prefill.allLogits[0]!.length).toBe(13 * config.vocabSize);
    expect(maxAbsDiff(a.prefill.allLogits[0]!, b.prefill.allLogits[0]!)).toBeLessThan(1e-4);
    expect(a.prefill.allLogits.slice(1)).toEqual([null, null]);
    expect(maxAbsDiff(a.decode.logits, b.decode.logits)).toBeLessThan(1e-4);
  });

  it('refuses a step whose later pass runs past its blocks', async () => {
    const alloc = new BlockAllocator(inPasses);
    const table = alloc.table(12);
    await expect(inPasses.step([{ tokens: Array.from({ length: 12 }, (_, i) => i + 1), positionOffset: 0, blockTable: table.slice(0, 2) }])).rejects.toThrow();
  });
});
