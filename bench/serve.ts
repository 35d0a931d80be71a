// `npm run bench`: ortllm against llama.cpp (@fugood/llama.node behind bench/peer/llama-server.js)
// on the same GGUF files, both measured over HTTP by `ortllm bench serve` (runBenchmark: the same
// client, dataset and report for both). Prints per-concurrency tables and the ratios that
// matter. Environment knobs: BENCH_MODELS=stories,100m  BENCH_CONCURRENCY=1,8,32,64
// BENCH_MAX_TOKENS=64  BENCH_SKIP_PEER=1.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runBenchmark } from '../src/cli/bench-serve';
import { startServer } from './processes';
import { ensureBenchModel } from './random-model';
import { measureDecodeCeiling } from './runner-ceiling';

const repoRoot = resolve(__dirname, '..', '..');
const modelsDir = resolve(repoRoot, '..', 'shared', 'models');
const peerDir = join(repoRoot, 'bench', 'peer');
const cacheDir = join(repoRoot, '.bench-cache');

const PROMPTS = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.',
  'One day, a big dog came to the garden. The dog was very happy and wanted to play with the ball.',
  'Tom and his mom went to the store to buy some food. They saw a red apple and a big cake.',
  'The sun was shining and the birds were singing. Sam wanted to go to the beach with his dad.',
];

interface BenchModel {
  label: string;
  path: string;
  /** Requests per concurrency level = max(minRequests, concurrency). */
  minRequests: number;
}

function envList(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback).split(',').map((s) => s.trim()).filter(Boolean);
}

function ensurePeerInstalled(): void {
  if (existsSync(join(peerDir, 'node_modules', '@fugood', 'llama.node'))) return;
  console.log('Installing the llama.cpp peer (@fugood/llama.node, prebuilt, --omit=optional) ...');
  execFileSync('npm', ['install', '--omit=optional', '--no-audit', '--no-fund', '--no-package-lock'], {
    cwd: peerDir,
    stdio: 'inherit',
  });
}

function fmt(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

/** One concurrency level's numbers (vLLM's result JSON keys). */
interface LoadSummary {
  concurrency: number;
  completed: number;
  failed: number;
  request_throughput: number;
  output_throughput: number;
  [key: string]: number;
}

const promptsFile = join(cacheDir, 'bench-prompts.jsonl');

/** `bench serve` with the fixed prompts (custom dataset), greedy, ignore_eos. */
async function measure(baseUrl: string, maxTokens: number, concurrency: number, numRequests: number): Promise<LoadSummary> {
  const { result } = await runBenchmark({
    backend: 'openai',
    baseUrl,
    model: 'bench', // ortllm accepts its served name only; the peer ignores it
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
  return { ...(result as unknown as LoadSummary), concurrency };
}

function printTable(title: string, rows: LoadSummary[]): void {
  console.log(`\n${title}`);
  console.log('conc  done fail  req/s   out tok/s  TTFT p50/p99 ms   TPOT p50/p99 ms   ITL p50/p99 ms   E2E p50/p99 ms');
  for (const r of rows) {
    console.log(
      [
        String(r.concurrency).padEnd(4),
        String(r.completed).padStart(5),
        String(r.failed).padStart(4),
        fmt(r.request_throughput, 2).padStart(7),
        fmt(r.output_throughput).padStart(10),
        `${fmt(r.median_ttft_ms)}/${fmt(r.p99_ttft_ms)}`.padStart(16),
        `${fmt(r.median_tpot_ms)}/${fmt(r.p99_tpot_ms)}`.padStart(17),
        `${fmt(r.median_itl_ms)}/${fmt(r.p99_itl_ms)}`.padStart(16),
        `${fmt(r.median_e2el_ms)}/${fmt(r.p99_e2el_ms)}`.padStart(16),
      ].join(' '),
    );
  }
}

async function sweep(baseUrl: string, concurrencies: number[], model: BenchModel, maxTokens: number): Promise<LoadSummary[]> {
  // Warm-up: first-request costs (graph load, allocation) are not what we measure.
  await measure(baseUrl, 4, 2, 2);
  const rows: LoadSummary[] = [];
  for (const concurrency of concurrencies) {
    const numRequests = Math.max(model.minRequests, concurrency);
    rows.push(await measure(baseUrl, maxTokens, concurrency, numRequests));
  }
  return rows;
}

async function benchOrtllm(model: BenchModel, concurrencies: number[], maxTokens: number): Promise<LoadSummary[]> {
  const maxSeqs = String(Math.max(...concurrencies));
  const server = await startServer(
    process.execPath,
    [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', model.path, '--port', '0', '--max-num-seqs', maxSeqs, '--max-model-len', '1024', '--served-model-name', 'bench', '--disable-log-stats'],
    repoRoot,
    'ortllm',
  );
  try {
    return await sweep(server.baseUrl, concurrencies, model, maxTokens);
  } finally {
    await server.stop();
  }
}

async function benchPeer(model: BenchModel, concurrencies: number[], maxTokens: number): Promise<LoadSummary[]> {
  const rows: LoadSummary[] = [];
  // One peer per concurrency level, with as many llama.cpp slots as concurrent requests.
  for (const concurrency of concurrencies) {
    const peer = await startServer(process.execPath, ['llama-server.js', model.path, String(concurrency)], peerDir, 'llama.cpp peer');
    try {
      rows.push(...(await sweep(peer.baseUrl, [concurrency], model, maxTokens)));
    } finally {
      await peer.stop();
    }
  }
  return rows;
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a !== undefined && b !== undefined && b > 0 ? fmt(a / b, 2) : 'n/a';
}

async function main(): Promise<void> {
  const concurrencies = envList('BENCH_CONCURRENCY', '1,8,32,64').map(Number);
  const maxTokens = Number(process.env.BENCH_MAX_TOKENS ?? 64);
  const skipPeer = process.env.BENCH_SKIP_PEER === '1';
  const storiesPath = join(modelsDir, 'stories260K.gguf');
  if (!existsSync(storiesPath)) throw new Error(`missing ${storiesPath}: the benchmark needs ../shared/models`);
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(promptsFile, PROMPTS.map((prompt) => JSON.stringify({ prompt })).join('\n'));
  const wanted = envList('BENCH_MODELS', 'stories,100m');
  const models: BenchModel[] = [];
  if (wanted.includes('stories')) models.push({ label: 'stories260K (F32)', path: storiesPath, minRequests: 16 });
  if (wanted.includes('100m')) {
    console.log('Preparing the ~100M-parameter random Llama GGUF (Q8_0) ...');
    const path = await ensureBenchModel(join(cacheDir, 'bench-100m-q8_0.gguf'), storiesPath);
    models.push({ label: 'random llama ~100M (Q8_0)', path, minRequests: 8 });
  }
  if (!skipPeer) ensurePeerInstalled();

  for (const model of models) {
    console.log(`\n=== ${model.label}: ${model.path}  (max_tokens ${maxTokens}, ignore_eos, greedy)`);
    const ours = await benchOrtllm(model, concurrencies, maxTokens);
    printTable('ortllm', ours);
    const peer = skipPeer ? [] : await benchPeer(model, concurrencies, maxTokens);
    if (!skipPeer) printTable('llama.cpp (@fugood/llama.node, 1 thread, parallel slots = concurrency)', peer);

    const at = (rows: LoadSummary[], c: number) => rows.find((r) => r.concurrency === c)?.output_throughput;
    const ceiling = await measureDecodeCeiling(model.path, 32, PROMPTS[0].length / 4 + maxTokens / 2);
    console.log('\nRatios (output tokens/s):');
    console.log(`  ortllm / llama.cpp at concurrency 1:   ${ratio(at(ours, 1), at(peer, 1))}   (target >= 1.0)`);
    console.log(`  ortllm / llama.cpp at concurrency 32:  ${ratio(at(ours, 32), at(peer, 32))}   (target >= 2.0)`);
    console.log(`  ortllm at 32 / ortllm single-stream:   ${ratio(at(ours, 32), at(ours, 1))}   (target >= 10 on ~100M)`);
    console.log(
      `  ortllm at 32 / runner-alone decode ceiling (batch 32, ${fmt(ceiling, 0)} tok/s): ${ratio(at(ours, 32), ceiling)}   (target >= 0.8)`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
