/** @jest-environment ./test/helpers/ort-environment.js */
// The runner's paged KV cache: incremental decoding, chunked prefill, ragged batches,
// copy-on-write block copies, and input validation.
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { createRunner, kvBytesPerBlock } from '../../../src/model/runner';
import { ModelRunner } from '../../../src/model/types';
import { referenceForward } from '../../helpers/reference-forward';
import { ATTENTION_PATHS, BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';

const config = llamaConfig({ numLayers: 2 });
const model = randomModel(config, 3);
const PROMPTS = [
  [1, 20, 30, 40, 50, 60, 70, 80, 90],
  [1, 400],
  [1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22],
  [2],
];
// Both attention paths: the native paged kernel between graph segments, and attention inside one graph.
describe.each(ATTENTION_PATHS)('$name', ({ attention, gate }) => {
  gate.describe('runner', () => {
    let runner: ModelRunner;

    beforeAll(async () => {
      runner = await createRunner(model, { blockSize: 4, numBlocks: 64, device: 'cpu', intraOpThreads: 1, attention });
    });
    afterAll(() => runner.dispose());

    const reference = (tokens: number[]) => referenceForward(config, model.weights!, tokens);

    it('decoding one token at a time equals full recomputation', async () => {
      const tokens = PROMPTS[0];
      const table = new BlockAllocator(runner).table(tokens.length);
      const stepwise = await runChunked(runner, tokens, 1, table);
      const full = reference(tokens);
      stepwise.forEach((l, i) => expect(maxAbsDiff(l, full[i])).toBeLessThan(1e-3));
    });

    it('prefill in chunks with past equals one-shot prefill', async () => {
      const tokens = PROMPTS[2];
      const alloc = new BlockAllocator(runner);
      const oneShot = await runChunked(runner, tokens, tokens.length, alloc.table(tokens.length));
      const chunked = await runChunked(runner, tokens, 5, alloc.table(tokens.length));
      chunked.forEach((l, i) => expect(maxAbsDiff(l, oneShot[i])).toBeLessThan(1e-4));
    });

    it('a batch of ragged decode and prefill sequences gives each the logits it gets alone', async () => {
      const alloc = new BlockAllocator(runner);
      // Prefill all but the last token of each prompt, then run the last tokens together in one
      // step, with a fresh prompt's prefill mixed into the same batch.
      const tables = PROMPTS.map((p) => alloc.table(p.length));
      for (let s = 0; s < 3; s++) {
        const p = PROMPTS[s];
        await runner.step([{ tokens: p.slice(0, -1), positionOffset: 0, blockTable: tables[s] }]);
      }
      const batch = [0, 1, 2].map((s) => ({ tokens: PROMPTS[s].slice(-1), positionOffset: PROMPTS[s].length - 1, blockTable: tables[s] }));
      batch.splice(1, 0, { tokens: PROMPTS[3], positionOffset: 0, blockTable: tables[3] });
      const order = [0, 3, 1, 2];
      const result = await runner.step(batch);
      expect(result.logits.length).toBe(4 * config.vocabSize);
      expect(result.allLogits).toEqual([null, null, null, null]);
      order.forEach((s, i) => {
        const alone = reference(PROMPTS[s]).at(-1)!;
        expect(maxAbsDiff(result.logits.subarray(i * config.vocabSize, (i + 1) * config.vocabSize), alone)).toBeLessThan(1e-3);
      });
    });

    it('allLogits returns every position of a chunk and the last one in logits', async () => {
      const tokens = PROMPTS[0];
      const table = new BlockAllocator(runner).table(tokens.length);
      const r = await runner.step([{ tokens, positionOffset: 0, blockTable: table, allLogits: true }]);
      const all = r.allLogits[0]!;
      expect(all.length).toBe(tokens.length * config.vocabSize);
      expect(Array.from(r.logits)).toEqual(Array.from(all.subarray((tokens.length - 1) * config.vocabSize)));
    });

    it('copyBlocks duplicates a shared partial block so a fork continues from the same past', async () => {
      const prompt = [1, 9, 8, 7, 6, 5]; // 6 tokens: block 0 full, block 1 half full
      const alloc = new BlockAllocator(runner);
      const parent = alloc.table(prompt.length);
      await runner.step([{ tokens: prompt, positionOffset: 0, blockTable: parent }]);
      const [copy] = alloc.table(1);
      runner.copyBlocks([[parent[1], copy]]);
      const child = [parent[0], copy];
      const r = await runner.step([
        { tokens: [100], positionOffset: 6, blockTable: parent },
        { tokens: [200], positionOffset: 6, blockTable: child },
      ]);
      const v = config.vocabSize;
      expect(maxAbsDiff(r.logits.subarray(0, v), reference([...prompt, 100]).at(-1)!)).toBeLessThan(1e-3);
      expect(maxAbsDiff(r.logits.subarray(v), reference([...prompt, 200]).at(-1)!)).toBeLessThan(1e-3);
      expect(() => runner.copyBlocks([[0, 64]])).toThrow(/out of range/);
    });

    it('rejects block tables that do not cover the positions and positions past the model', async () => {
      await expect(runner.step([{ tokens: [1, 2, 3, 4, 5], positionOffset: 0, blockTable: [0] }])).rejects.toThrow(/does not cover position 4/);
      await expect(runner.step([{ tokens: [1], positionOffset: 5000, blockTable: [0] }])).rejects.toThrow(/beyond the model's 2048 positions/);
    });


  });
});

it('kvBytesPerBlock counts K and V of every layer in f32, half that in 16 bits, a quarter in fp8', () => {
  const float32 = 2 * config.numLayers * 16 * config.numKvHeads * config.headDim * 4;
  expect(kvBytesPerBlock(config, 16)).toBe(float32);
  expect(kvBytesPerBlock(config, 16, 'bfloat16')).toBe(float32 / 2);
  expect(kvBytesPerBlock(config, 16, 'fp8_e4m3')).toBe(float32 / 4);
  expect(kvBytesPerBlock(config, 16, 'fp8_e5m2')).toBe(float32 / 4);
});

it('device cuda fails with a clear message when the CUDA provider is not installed', async () => {
  await expect(createRunner(randomModel(llamaConfig({ numLayers: 1 })), { blockSize: 4, numBlocks: 4, device: 'cuda' })).rejects.toThrow(
    /device "cuda" is not available: onnxruntime-node's CUDA execution provider libraries/,
  );
});
