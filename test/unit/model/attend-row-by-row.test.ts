/** @jest-environment ./test/helpers/ort-environment.js */
// A verification step (several new tokens of one sequence, attended row by row) gives each
// position the very logits a one-token decode gives it, bit for bit, at every attention build,
// and the rows of verifying sequences do not change how the kernel splits the batch's other
// decodes: speculative decoding must not change greedy output through a rounding difference.

import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import type { LoadedModel, ModelRunner, StepSequence } from '../../../src/model/types';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { BlockAllocator, maxAbsDiff, withRunner } from '../../helpers/runner-driver';

const F32 = sharedModel('stories260K.gguf');
const Q8 = sharedModel('stories260K-Q8_0.gguf');
const PROMPT = [1, 403, 407, 261, 378, 429, 270, 300, 350, 280, 311, 299, 265, 400, 301, 290, 311];
const NEXT = [265, 400, 301, 290, 311];

async function load(path: string): Promise<LoadedModel> {
  const gguf = await loadGgufModel(path, { loadWeights: true });
  return {
    source: path, config: gguf.config, output: { kind: 'logits' }, pooler: null, weights: gguf.weights, onnxPath: null,
    tokenizer: null, chatTemplate: null, generationDefaults: {}, eosTokenIds: [], contextLength: 256,
  } as unknown as LoadedModel;
}

/** Logits of NEXT after PROMPT: one decode step per token, and one step of them all. */
async function oneByOneAndTogether(r: ModelRunner): Promise<{ decodes: Float32Array[]; together: Float32Array }> {
  const alloc = new BlockAllocator(r);
  const a = alloc.table(64);
  await r.step([{ tokens: PROMPT, positionOffset: 0, blockTable: a }]);
  const decodes: Float32Array[] = [];
  for (let i = 0; i < NEXT.length; i++) decodes.push((await r.step([{ tokens: [NEXT[i]], positionOffset: PROMPT.length + i, blockTable: a }])).logits.slice());
  const b = alloc.table(64);
  await r.step([{ tokens: PROMPT, positionOffset: 0, blockTable: b }]);
  // A neighbour in the same step, so the verified sequence is not alone in its pass.
  const c = alloc.table(32);
  const step = await r.step([
    { tokens: PROMPT.slice(0, 9), positionOffset: 0, blockTable: c },
    { tokens: NEXT, positionOffset: PROMPT.length, blockTable: b, allLogits: true, attendRowByRow: true },
  ]);
  return { decodes, together: step.allLogits[1]! };
}

/**
 * Three sequences decoded alone, one token a step, against one step where the first decodes one
 * token and the others verify five and three: with one thread, the eight attention entries would
 * make the kernel split the batch as a wide one (four sequences per thread), which three are not.
 */
async function batchAgainstAlone(r: ModelRunner): Promise<number[]> {
  const V = r.config.vocabSize;
  const alloc = new BlockAllocator(r);
  const prompts = [PROMPT.slice(0, 5), PROMPT.slice(3, 10), PROMPT.slice(0, 5)];
  const next = [NEXT, [270, 271, 272, 273, 274], NEXT];
  const counts = [1, 5, 3];
  const alone: Float32Array[][] = [];
  for (let s = 0; s < 3; s++) {
    const t = alloc.table(32);
    await r.step([{ tokens: prompts[s], positionOffset: 0, blockTable: t }]);
    alone.push([]);
    for (let i = 0; i < counts[s]; i++) alone[s].push((await r.step([{ tokens: [next[s][i]], positionOffset: prompts[s].length + i, blockTable: t }])).logits.slice());
  }
  const tables = prompts.map(() => alloc.table(32));
  await r.step(prompts.map((p, s) => ({ tokens: p, positionOffset: 0, blockTable: tables[s] })));
  const batch: StepSequence[] = prompts.map((p, s) => ({ tokens: next[s].slice(0, counts[s]), positionOffset: p.length, blockTable: tables[s], allLogits: true, attendRowByRow: counts[s] > 1 }));
  const step = await r.step(batch);
  const diffs: number[] = [];
  for (let s = 0; s < 3; s++) for (let i = 0; i < counts[s]; i++) diffs.push(maxAbsDiff(step.allLogits[s]!.subarray(i * V, (i + 1) * V), alone[s][i]));
  return diffs;
}

const native = nativeKernels();
const levels = (['portable', 'avx2', 'avx512', 'avx512bf16'] as const).filter((l) => native && native.setSimd(l) === l);
afterAll(() => native?.setSimd('avx512bf16'));

const MODELS = [
  { name: 'stories260K', gate: needs(F32), load: () => load(F32) },
  { name: 'stories260K-Q8_0', gate: needs(Q8), load: () => load(Q8) },
  // Widths in 32-blocks, so its linears run on native-q8 (stories260K-Q8_0's MLP width is not).
  { name: 'a seeded Q8_0 llama', gate: needs(), load: async () => quantizedQ8(randomModel(llamaConfig({ intermediateSize: 192, vocabSize: 512, tieWordEmbeddings: false }), 5)), backend: 'native-q8' },
  // Multi-head at head size 32: the kernel takes a verification's rows together (one item per KV
  // head), and the linears take its five rows in one tall tile.
  {
    name: 'a seeded multi-head Q8_0 llama',
    gate: needs(),
    load: async () => quantizedQ8(randomModel(llamaConfig({ hiddenSize: 128, numHeads: 4, numKvHeads: 4, headDim: 32, intermediateSize: 192, vocabSize: 512, tieWordEmbeddings: false }), 6)),
    backend: 'native-q8',
  },
];

for (const m of MODELS) {
  m.gate.describe(m.name, () => {
    it.each(levels)('attention build %s: each row equals its decode', async (level) => {
      native!.setSimd(level);
      await withRunner(await m.load(), { blockSize: 16, numBlocks: 64, device: 'cpu' }, async (r) => {
        if (m.backend) expect((r as unknown as { backendName: string }).backendName).toBe(m.backend);
        const { decodes, together } = await oneByOneAndTogether(r);
        const V = r.config.vocabSize;
        decodes.forEach((row, i) => expect(Array.from(together.subarray(i * V, (i + 1) * V))).toEqual(Array.from(row)));
      });
    });

    it('verifying sequences leave the batch\'s decodes as they are alone (one thread)', async () => {
      native!.setSimd('avx512bf16');
      native!.setThreads(1);
      await withRunner(await m.load(), { blockSize: 16, numBlocks: 64, device: 'cpu', intraOpThreads: 1 }, async (r) => {
        expect(await batchAgainstAlone(r)).toEqual(new Array<number>(9).fill(0));
      });
    });
  });
}
