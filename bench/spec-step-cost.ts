// `node dist/bench/spec-step-cost.js`: what a speculative step costs the runner, with no server in
// the way: a step of k+1 tokens of one sequence (the verification pass) against a 1-token step,
// at batch 1 and 32, on the draft pair's target; and a draft model's 1-token step, for the pair's
// 4096-piece vocabulary and for 32000 (the head, vocab x hidden, is read at every draft token).
//
//   node dist/bench/spec-step-cost.js [--scale 0.1] [--context 700] [--k 1,2,3,4,6,8]

import { join, resolve } from 'node:path';
import { loadModel } from '../src/model/load-model';
import { createRunner, resolveKvCacheDtype } from '../src/model/runner';
import type { ModelRunner } from '../src/model/types';
import { BENCH_PAIR, ensureDraftPair } from './draft-pair';
import { median, serverThreads, touchKvCache } from './runner-ceiling';

const repoRoot = resolve(__dirname, '..', '..');
const cacheDir = join(repoRoot, '.bench-cache');
const storiesPath = resolve(repoRoot, '..', 'shared', 'models', 'stories260K.gguf');
const BLOCK = 16;
const REPEAT = 15;

async function openRunner(path: string, sequences: number, context: number): Promise<{ runner: ModelRunner; table: (s: number) => number[] }> {
  const model = await loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' });
  const perSeq = Math.ceil((context + 64) / BLOCK);
  const runner = await createRunner(model, { blockSize: BLOCK, numBlocks: sequences * perSeq, device: 'cpu', intraOpThreads: serverThreads(), kvCacheDtype: resolveKvCacheDtype(model, 'auto') });
  touchKvCache(runner);
  return { runner, table: (s) => Array.from({ length: perSeq }, (_, b) => s * perSeq + b) };
}

/**
 * A verification step's flags as the engine sets them: logits for every row, each row attended as
 * a one-token step would (StepSequence.attendRowByRow, where the runner has it; spread so this
 * file builds where it does not yet).
 */
const VERIFY: Record<string, boolean> = { allLogits: true, attendRowByRow: true };

/** Median ms of a step giving each of `batch` sequences `tokens` new tokens at `position`. */
async function stepMs(r: { runner: ModelRunner; table: (s: number) => number[] }, batch: number, tokens: number, position: number): Promise<number> {
  const seq = (s: number) => ({ tokens: Array.from({ length: tokens }, (_, i) => 300 + ((s + i) % 200)), positionOffset: position, blockTable: r.table(s), ...(tokens > 1 ? VERIFY : {}) });
  const step = () => r.runner.step(Array.from({ length: batch }, (_, s) => seq(s)));
  await step();
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    await step();
    times.push(performance.now() - t);
  }
  return median(times);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const scale = Number(get('--scale') ?? BENCH_PAIR.residualScale);
  const context = Number(get('--context') ?? 700);
  const ks = (get('--k') ?? '1,2,3,4,6,8').split(',').map(Number);
  const pair = await ensureDraftPair({ ...BENCH_PAIR, residualScale: scale }, cacheDir, storiesPath);
  const wide = await ensureDraftPair({ ...BENCH_PAIR, residualScale: scale, vocabSize: 32000 }, cacheDir, storiesPath);
  console.log(`spec-step-cost: context ${context}, ${serverThreads()} threads, median of ${REPEAT} steps`);

  const target = await openRunner(pair.target, 32, context);
  try {
    for (const batch of [1, 8, 32]) {
      const one = await stepMs(target, batch, 1, context);
      const row = [`target, batch ${String(batch).padStart(2)}: 1 token ${one.toFixed(2)} ms`];
      for (const k of ks) {
        const ms = await stepMs(target, batch, k + 1, context);
        row.push(`k+1=${k + 1}: ${ms.toFixed(2)} ms (x${(ms / one).toFixed(2)})`);
      }
      console.log(row.join(' | '));
    }
  } finally {
    await target.runner.dispose();
  }
  for (const [label, path] of [
    ['draft, 4096 pieces', pair.draft],
    ['draft, 32000 pieces', wide.draft],
    ['target, 32000 pieces', wide.target],
  ] as const) {
    const r = await openRunner(path, 8, context);
    try {
      console.log(`${label}: 1 token ${(await stepMs(r, 1, 1, context)).toFixed(2)} ms, batch 8 ${(await stepMs(r, 8, 1, context)).toFixed(2)} ms`);
    } finally {
      await r.runner.dispose();
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
