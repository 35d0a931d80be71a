// `node dist/bench/lora-overhead.js [--ms 1500] [--rows 1,8,64] [--hidden 512] [--layers 4]`: what
// LoRA costs a step of the segmented runner, per backend, on seeded random llama models: the
// runner built without LoRA, built with it (max_loras 4, max_lora_rank 16) running base rows only,
// and running every row with one adapter (rank 16) and spread over four adapters. Each step runs
// the same rows at the same positions (the cache slots rewritten) on one thread, timed as the
// median CPU time of steps over --ms (steadier than wall time on a shared machine); rows 1 and 8
// are decode-sized batches (one row a sequence), 64 one prefill chunk.
import { llamaConfig, quantizedQ8, randomModel } from './random-llama';
import { randomAdapter } from './random-lora';
import { arg } from './kernel-timing';
import { createRunner } from '../src/model/runner';
import type { SegmentedRunner } from '../src/model/runner/segmented-runner';
import type { LoadedModel, ModelRunner, RunnerOptions, StepSequence } from '../src/model/types';

const LORA = { maxLoras: 4, maxRank: 16 };
const BLOCK = 16;

/** `rows` rows as sequences of one row each (decode) or as one chunk (prefill), adapters by `loraOf(sequence)`. */
function batchOf(rows: number, loraOf: (seq: number) => number): StepSequence[] {
  const decode = rows <= 8;
  const seqs = decode ? rows : 1;
  const per = rows / seqs;
  return Array.from({ length: seqs }, (_, i) => ({
    tokens: Array.from({ length: per }, (_, t) => 1 + ((i * 31 + t * 7) % 200)),
    positionOffset: decode ? 32 : 0,
    blockTable: Array.from({ length: 8 }, (_, b) => i * 8 + b),
    lora: loraOf(i) || undefined,
  }));
}

async function timeSteps(runner: ModelRunner, batch: StepSequence[], ms: number): Promise<number> {
  // kernel-timing's timeCall takes a synchronous call: a step is awaited.
  const samples: number[] = [];
  for (let i = 0; i < 3; i++) await runner.step(batch);
  const end = performance.now() + ms;
  while (performance.now() < end || samples.length < 5) {
    const c0 = process.cpuUsage();
    await runner.step(batch);
    const c = process.cpuUsage(c0);
    samples.push(c.user + c.system);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1];
}

async function withRunner<T>(model: LoadedModel, opts: Partial<RunnerOptions>, fn: (r: ModelRunner) => Promise<T>): Promise<T> {
  const runner = await createRunner(model, { blockSize: BLOCK, numBlocks: 128, device: 'cpu', intraOpThreads: 1, ...opts });
  try {
    return await fn(runner);
  } finally {
    await runner.dispose();
  }
}

async function main(): Promise<void> {
  const ms = Number(arg('ms', '1500'));
  const rowsList = arg('rows', '1,8,64').split(',').map(Number);
  const hidden = Number(arg('hidden', '512'));
  const layers = Number(arg('layers', '4'));
  const big = llamaConfig({ hiddenSize: hidden, intermediateSize: Math.round((hidden * 8) / 3 / 32) * 32, numLayers: layers, numHeads: hidden / 64, numKvHeads: hidden / 128, vocabSize: 2048, tieWordEmbeddings: false });
  const small = llamaConfig({ numLayers: 5, tieWordEmbeddings: false });
  const cases: Array<{ name: string; model: () => LoadedModel; opts: Partial<RunnerOptions> }> = [
    { name: `onnx-segments (f32, hidden ${hidden})`, model: () => randomModel(big, 1), opts: {} },
    { name: `native-q8 (Q8_0, hidden ${hidden})`, model: () => quantizedQ8(randomModel(big, 1)), opts: {} },
    { name: 'native-f32 (f32, hidden 64)', model: () => randomModel(small, 1), opts: {} },
  ];
  console.log(`CPU us per step, one thread (median over ${ms} ms); LoRA: max_loras ${LORA.maxLoras}, max_lora_rank ${LORA.maxRank}, adapters of rank 16 on all seven linears`);
  console.log('| backend | rows | no LoRA | LoRA built, base rows | 1 adapter, every row | 4 adapters |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const c of cases) {
    const model = c.model();
    const config = model.config as typeof big;
    const adapters = [1, 2, 3, 4].map((seed) => randomAdapter(config, 16, 32, seed));
    const plain = new Map<number, number>();
    let backend = '';
    await withRunner(model, c.opts, async (r) => {
      backend = (r as SegmentedRunner).backendName;
      for (const rows of rowsList) plain.set(rows, await timeSteps(r, batchOf(rows, () => 0), ms));
    });
    await withRunner(model, { ...c.opts, lora: LORA }, async (r) => {
      adapters.forEach((a, i) => r.loras!.add(i + 1, a));
      for (const rows of rowsList) {
        const base = await timeSteps(r, batchOf(rows, () => 0), ms);
        const one = await timeSteps(r, batchOf(rows, () => 1), ms);
        const four = await timeSteps(r, batchOf(rows, (s) => 1 + (s % 4)), ms);
        const pct = (t: number) => `${t.toFixed(0)} (${(((t - plain.get(rows)!) / plain.get(rows)!) * 100).toFixed(0)}%)`;
        console.log(`| ${c.name} [${backend}] | ${rows} | ${plain.get(rows)!.toFixed(0)} | ${pct(base)} | ${pct(one)} | ${rows > 1 && rows <= 8 ? pct(four) : '-'} |`);
      }
    });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
