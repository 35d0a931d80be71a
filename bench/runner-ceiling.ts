// The runner-alone figures `npm run bench` compares the served engine against: ModelRunner.step
// with no scheduler, sampler or HTTP in the way (the measurement `npm run bench:forward` makes),
// on the engine's intra-op thread count (VLLM_CPU_OMP_THREADS_BIND's, as the server reads it): prefill tokens/s of one prompt, batch-1 decode as a
// served request runs it, and batch-32 decode steps at a given context.
//
// The batch-1 figure is measured the way the served TPOT is: a request's TPOT is the mean of its
// (maxTokens - 1) decode steps, one after another at positions promptLen, promptLen + 1, ..., and
// the bench reports the median over requests. So the runner decodes the same runs of consecutive
// steps and reports the median of their means. (The fastest of a few single steps, interleaved
// with batch-32 steps, was the figure before: it leaves out every step's jitter that a mean over
// a run keeps, so it overstated the served overhead.)
//
// Every KV row a step reads must be real memory. The cache arrays start as untouched pages, which
// the OS maps to one shared zero page: reading "past" rows nobody wrote costs almost nothing (the
// same 4 KiB stay in L1), so a decode at context 700 over unwritten rows left out most of its
// attention's memory traffic. Measured on the ~100M model (12 layers x 768-wide K and V rows, 54 MB
// per step at context 734): 6.4 ms per batch-1 step over unwritten rows against 11.6 ms inside the
// engine, which reads its prompt's real rows; the served TPOT / runner ratio at long prompts was
// that artefact. So the batch-1 sequence's prompt is prefilled into its own blocks (the prefill
// figure's runs), and every other row is written once before the batch-32 steps.

import { loadModel } from '../src/model/load-model';
import { createRunner, resolveKvCacheDtype } from '../src/model/runner';
import type { KvCacheDtypeFlag } from '../src/model/runner/kv-dtype';
import type { PagedKvCache } from '../src/model/runner/kv-cache';
import type { ModelRunner } from '../src/model/types';
import { defaultIntraOpThreads } from '../src/engine/core/core-host';
import { fromVllmEnv } from '../src/config/vllm-env';

export interface RunnerFigures {
  /** Prompt tokens/s of one prefill of `promptLen` tokens (best of a few). */
  prefillTokS: number;
  /** Milliseconds per batch-1 decode step: median over runs of each run's mean (the served TPOT's counterpart). */
  step1Ms: number;
  /** The fastest single batch-1 step of those runs. */
  step1MinMs: number;
  /** Decode tokens/s at batch 32 and `context`. */
  decode32TokS: number;
}

export interface RunnerWorkload {
  promptLen: number;
  /** Tokens each request generates (max_tokens): a batch-1 run is decodeTokens - 1 steps after the prompt. */
  decodeTokens: number;
  /** Context of the batch-32 decode steps. */
  context: number;
  /** --kv-cache-dtype as given to the server (absent: auto). */
  kvCacheDtype?: string;
}

/** Batch-1 runs: at least this many, more while the runs so far took less than RUN_BUDGET_MS. */
const MIN_RUNS = 3;
const MAX_RUNS = 9;
const RUN_BUDGET_MS = 8_000;

export async function measureRunner(modelPath: string, w: RunnerWorkload): Promise<RunnerFigures> {
  const model = await loadModel({ model: modelPath, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' });
  const blockSize = 16;
  const batch = 32;
  const steps = 8;
  const promptLen = w.promptLen;
  const runSteps = Math.max(1, w.decodeTokens - 1);
  const ctx = Math.max(1, Math.round(w.context));
  const perSeq = Math.ceil((Math.max(ctx + steps, promptLen + runSteps) + 2) / blockSize);
  const runner = await createRunner(model, {
    blockSize,
    numBlocks: (batch + 1) * perSeq,
    device: 'cpu',
    intraOpThreads: serverThreads(),
    // As the server stores it: 'auto' follows the model (float16 for GGUF with the native addon).
    kvCacheDtype: resolveKvCacheDtype(model, (w.kvCacheDtype ?? 'auto') as KvCacheDtypeFlag),
  });
  const table = (s: number) => Array.from({ length: perSeq }, (_, b) => s * perSeq + b);
  const tokens = (n: number, from: number) => Array.from({ length: n }, (_, i) => 1 + ((from + i * 31) % 400));
  const decode = async (n: number, position: number) => {
    const t = performance.now();
    await runner.step(Array.from({ length: n }, (_, s) => ({ tokens: [5], positionOffset: position, blockTable: table(s) })));
    return performance.now() - t;
  };
  try {
    touchKvCache(runner);
    // The prompt of the batch-1 runs below: its K/V rows are the ones those steps read.
    let prefillMs = Infinity;
    for (let r = 0; r < 2; r++) {
      const t = performance.now();
      await runner.step([{ tokens: tokens(promptLen, r), positionOffset: 0, blockTable: table(0) }]);
      prefillMs = Math.min(prefillMs, performance.now() - t);
    }
    // Batch 1 as a request decodes: runSteps consecutive steps after a prompt of promptLen.
    const runMeans: number[] = [];
    let step1Min = Infinity;
    const started = performance.now();
    await decode(1, promptLen); // warm-up
    while (runMeans.length < MIN_RUNS || (runMeans.length < MAX_RUNS && performance.now() - started < RUN_BUDGET_MS)) {
      let sum = 0;
      for (let i = 0; i < runSteps; i++) {
        const ms = await decode(1, promptLen + i);
        sum += ms;
        step1Min = Math.min(step1Min, ms);
      }
      runMeans.push(sum / runSteps);
    }
    // Batch-32 steps at `ctx` tokens of past read ctx cached rows per sequence, written by
    // touchKvCache rather than computed (prefilling 32 sequences would take a 1.1B model minutes).
    await decode(batch, ctx); // warm-up
    let step32 = Infinity;
    for (let i = 1; i <= steps; i++) step32 = Math.min(step32, await decode(batch, ctx + i));
    return { prefillTokS: (promptLen / prefillMs) * 1000, step1Ms: median(runMeans), step1MinMs: step1Min, decode32TokS: (batch / step32) * 1000 };
  } finally {
    await runner.dispose();
  }
}

/** The forward pass's thread count the served engine gets: VLLM_CPU_OMP_THREADS_BIND's, else the default. */
export function serverThreads(): number {
  return fromVllmEnv(process.env, {}).cpuThreads ?? defaultIntraOpThreads();
}

/**
 * The line a serving bench prints first: ortllm's forward-pass threads (VLLM_CPU_OMP_THREADS_BIND
 * is a CPU list, so "2" is one thread) and a warning when the peer runs another count, which
 * would make every ratio of the run compare unequal machines.
 */
export function threadsLine(peerThreads: number | null): string {
  const ours = serverThreads();
  const bind = process.env.VLLM_CPU_OMP_THREADS_BIND;
  const line = `ortllm forward pass: ${ours} thread${ours === 1 ? '' : 's'} (VLLM_CPU_OMP_THREADS_BIND ${bind === undefined ? 'unset: every core' : `'${bind}'`})`;
  if (peerThreads === null || peerThreads === ours) return line;
  return `${line}\nWARNING: the peer runs ${peerThreads} threads and ortllm ${ours}: the ratios below compare unequal thread counts`;
}

/**
 * Writes every row of the runner's paged KV cache once, so no step reads the shared zero page
 * (see the header). The cache is the runner's own (PagedRunner keeps it in `cache`); a runner
 * without one has nothing to touch.
 */
export function touchKvCache(runner: ModelRunner): void {
  const cache = (runner as unknown as { cache?: PagedKvCache }).cache;
  if (!cache) return;
  for (const rows of [...cache.keys, ...cache.values]) rows.fill(0);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
