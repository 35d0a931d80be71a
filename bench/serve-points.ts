// The measurement points both benchmark scripts (serve.ts, lora-serve.ts) take and print: one
// `ortllm bench serve` run (runBenchmark) per point, and vLLM's result keys.
import { runBenchmark } from '../src/cli/bench-serve';
import type { RunningServer } from './processes';

/** The short-prompt workload: stories-style openings (~25 tokens), repeated as often as a run needs. */
export const SHORT_PROMPTS = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.',
  'One day, a big dog came to the garden. The dog was very happy and wanted to play with the ball.',
  'Tom and his mom went to the store to buy some food. They saw a red apple and a big cake.',
  'The sun was shining and the birds were singing. Sam wanted to go to the beach with his dad.',
];

/** One measurement point (vLLM's result JSON keys). */
export interface Point {
  concurrency: number;
  completed: number;
  failed: number;
  output_throughput: number;
  [key: string]: number;
}

export interface Server extends RunningServer {
  label: string;
}

/** One point: `numRequests` greedy requests of `maxTokens` (ignore_eos) from `promptsFile`, `concurrency` at a time, for `model`. */
export async function measure(server: Server, promptsFile: string, maxTokens: number, concurrency: number, numRequests: number, model = 'bench'): Promise<Point> {
  const { result } = await runBenchmark({
    backend: 'openai',
    baseUrl: server.baseUrl,
    model, // ortllm serves the base as 'bench'; llama.cpp ignores the field
    datasetName: 'custom',
    datasetPath: promptsFile,
    numPrompts: numRequests,
    randomInputLen: 0,
    randomOutputLen: 0,
    randomRangeRatio: 0,
    randomPrefixLen: 0,
    customOutputLen: maxTokens,
    requestRate: Infinity,
    burstiness: 1,
    maxConcurrency: concurrency,
    numWarmups: 0,
    seed: 0,
    ignoreEos: true,
    temperature: 0,
    percentileMetrics: ['ttft', 'tpot', 'itl', 'e2el'],
    percentiles: [99],
    disableProgress: true,
    print: () => undefined,
  });
  const point = { ...(result as unknown as Point), concurrency };
  if (point.failed > 0) console.warn(`  ${server.label}: ${point.failed} of ${numRequests} requests failed at concurrency ${concurrency}`);
  return point;
}

export const fmt = (n: number | undefined, digits = 1) => (n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
export const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? a / b : NaN);

export function printTable(title: string, rows: Point[]): void {
  console.log(`\n${title}`);
  console.log('conc  done fail   out tok/s  TTFT p50/p99 ms    TPOT p50/p99 ms   ITL p50/p99 ms   E2E p50/p99 ms');
  for (const r of rows) {
    console.log(
      [
        String(r.concurrency).padEnd(4),
        String(r.completed).padStart(5),
        String(r.failed).padStart(4),
        fmt(r.output_throughput).padStart(11),
        `${fmt(r.median_ttft_ms)}/${fmt(r.p99_ttft_ms)}`.padStart(17),
        `${fmt(r.median_tpot_ms, 2)}/${fmt(r.p99_tpot_ms, 2)}`.padStart(17),
        `${fmt(r.median_itl_ms)}/${fmt(r.p99_itl_ms)}`.padStart(16),
        `${fmt(r.median_e2el_ms)}/${fmt(r.p99_e2el_ms)}`.padStart(16),
      ].join(' '),
    );
  }
}

