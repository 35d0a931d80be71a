// `npm run bench:embed`: embeddings/s and p50/p99 latency at concurrency 1, 8, 32 for 16- and
// 128-token inputs on a MiniLM-shaped random BERT (bench/random-bert.ts), ortllm over HTTP
// (/v1/embeddings, one request per input, the server packs them) against transformers.js
// (@huggingface/transformers, in-process, given the same inputs in batches of the concurrency:
// its own batching, no HTTP). Prints figures, asserts nothing.
// Knobs: BENCH_EMBED_CONCURRENCY=1,8,32  BENCH_EMBED_TOKENS=16,128  BENCH_EMBED_ROUNDS=4 (requests =
// rounds x concurrency, at least 16)  BENCH_EMBED_REPEATS=3 (alternating runs per cell, best kept)
// BENCH_SKIP_PEER=1.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { startServer } from './processes';
import { benchWord, ensureBenchBert } from './random-bert';

const repoRoot = resolve(__dirname, '..', '..');
const peerDir = join(repoRoot, 'bench', 'peer-transformers');
const cacheDir = join(repoRoot, '.bench-cache');

interface Figures {
  embeddingsPerS: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

function envNumbers(name: string, fallback: string): number[] {
  return (process.env[name] ?? fallback).split(',').map(Number).filter((n) => n > 0);
}

/** `count` distinct texts of `tokens` tokens each ([CLS] + words + [SEP]). */
function texts(count: number, tokens: number, salt: number): string[] {
  return Array.from({ length: count }, (_, i) => Array.from({ length: tokens - 2 }, (_, j) => benchWord(salt * 7919 + i * 104729 + j * 31)).join(' '));
}

function percentile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function summarize(latenciesMs: number[], durationS: number, failed: number): Figures {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return { embeddingsPerS: latenciesMs.length / durationS, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), failed };
}

/** `concurrency` clients each POSTing one input at a time until every input is embedded. */
async function loadOrtllm(baseUrl: string, inputs: string[], concurrency: number): Promise<Figures> {
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < inputs.length) {
        const input = inputs[next++];
        const t0 = performance.now();
        const res = await fetch(`${baseUrl}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input, encoding_format: 'float' }) });
        const body = (await res.json()) as { data?: Array<{ embedding: number[] }> };
        if (res.ok && body.data?.[0]?.embedding.length) latencies.push(performance.now() - t0);
        else failed++;
      }
    }),
  );
  return summarize(latencies, (performance.now() - started) / 1000, failed);
}

type Extractor = (texts: string[], options: { pooling: 'mean'; normalize: boolean }) => Promise<{ dims: number[] }>;

/** The part of @huggingface/transformers the bench uses. */
interface TransformersJs {
  env: { allowRemoteModels: boolean; localModelPath: string };
  pipeline(task: 'feature-extraction', model: string, options: { dtype: 'fp32'; device: 'cpu' }): Promise<Extractor>;
}

/** transformers.js, installed on first use into bench/peer-transformers (never a dependency of ortllm). */
function loadPeer(modelDir: string): Promise<Extractor> {
  if (!existsSync(join(peerDir, 'node_modules', '@huggingface', 'transformers'))) {
    console.log('Installing the transformers.js peer (@huggingface/transformers) into bench/peer-transformers ...');
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: peerDir, stdio: 'inherit' });
  }
  const transformers = createRequire(join(peerDir, 'package.json'))('@huggingface/transformers') as TransformersJs;
  transformers.env.allowRemoteModels = false;
  transformers.env.localModelPath = resolve(modelDir, '..');
  return transformers.pipeline('feature-extraction', modelDir.split('/').pop()!, { dtype: 'fp32', device: 'cpu' });
}

/** The peer's own batching: the inputs in batches of `concurrency`, each item's latency that of its batch. */
async function loadTransformersJs(extractor: Extractor, inputs: string[], concurrency: number): Promise<Figures> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let at = 0; at < inputs.length; at += concurrency) {
    const batch = inputs.slice(at, at + concurrency);
    const t0 = performance.now();
    const out = await extractor(batch, { pooling: 'mean', normalize: true });
    if (out.dims[0] !== batch.length) throw new Error(`transformers.js returned ${out.dims[0]} embeddings for ${batch.length} inputs`);
    const ms = performance.now() - t0;
    for (let i = 0; i < batch.length; i++) latencies.push(ms);
  }
  return summarize(latencies, (performance.now() - started) / 1000, 0);
}

/** Both sides must compute the same thing: their embeddings of a few inputs agree. */
async function checkSameEmbeddings(baseUrl: string, extractor: Extractor): Promise<void> {
  const inputs = texts(3, 24, 12345);
  const res = await fetch(`${baseUrl}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: inputs, encoding_format: 'float' }) });
  const ours = ((await res.json()) as { data: Array<{ embedding: number[] }> }).data.map((d) => d.embedding);
  const theirs = (await extractor(inputs, { pooling: 'mean', normalize: true })) as unknown as { tolist(): number[][] };
  const worst = Math.max(...theirs.tolist().flatMap((row, i) => row.map((v, j) => Math.abs(v - ours[i][j]))));
  console.log(`same weights, same inputs: largest |ortllm - transformers.js| embedding difference ${worst.toExponential(2)}`);
  if (!(worst < 1e-3)) throw new Error('ortllm and transformers.js disagree: the comparison would be meaningless');
}

function best(a: Figures | null, b: Figures): Figures {
  return a === null || b.embeddingsPerS > a.embeddingsPerS ? b : a;
}

function fmt(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

async function main(): Promise<void> {
  const levels = envNumbers('BENCH_EMBED_CONCURRENCY', '1,8,32');
  const lengths = envNumbers('BENCH_EMBED_TOKENS', '16,128');
  const rounds = envNumbers('BENCH_EMBED_ROUNDS', '4')[0] ?? 4;
  const repeats = envNumbers('BENCH_EMBED_REPEATS', '3')[0] ?? 3;
  const modelDir = ensureBenchBert(cacheDir);
  const server = await startServer(process.execPath, [join(repoRoot, 'dist/src/main.js'), 'serve', modelDir, '--host', '127.0.0.1', '--port', '0', '--disable-uvicorn-access-log'], repoRoot, 'ortllm');
  const peer = process.env.BENCH_SKIP_PEER ? null : await loadPeer(modelDir);
  const rows: string[] = [];
  try {
    if (peer) await checkSameEmbeddings(server.baseUrl, peer);
    for (const tokens of lengths) {
      // Warm both up (session creation, first-run allocations) on inputs of this length.
      await loadOrtllm(server.baseUrl, texts(8, tokens, 999), 4);
      if (peer) await loadTransformersJs(peer, texts(8, tokens, 999), 4);
      for (const concurrency of levels) {
        const inputs = texts(Math.max(16, rounds * concurrency), tokens, concurrency);
        // Alternate the two sides `repeats` times and keep each side's best run: on a machine shared
        // with other work, load comes and goes, and alternating exposes both to the same spells.
        let ours: Figures | null = null;
        let theirs: Figures | null = null;
        for (let r = 0; r < repeats; r++) {
          ours = best(ours, await loadOrtllm(server.baseUrl, inputs, concurrency));
          if (peer) theirs = best(theirs, await loadTransformersJs(peer, inputs, concurrency));
        }
        ours = ours!;
        const ratio = theirs ? fmt(ours.embeddingsPerS / theirs.embeddingsPerS, 2) : 'n/a';
        rows.push(
          [
            String(tokens).padStart(6),
            String(concurrency).padStart(4),
            String(inputs.length).padStart(5),
            fmt(ours.embeddingsPerS).padStart(9),
            `${fmt(ours.p50Ms, 0)}/${fmt(ours.p99Ms, 0)}`.padStart(13),
            String(ours.failed).padStart(4),
            (theirs ? fmt(theirs.embeddingsPerS) : 'n/a').padStart(9),
            (theirs ? `${fmt(theirs.p50Ms, 0)}/${fmt(theirs.p99Ms, 0)}` : 'n/a').padStart(13),
            ratio.padStart(8),
          ].join('  '),
        );
        console.log(rows[rows.length - 1]);
      }
    }
  } finally {
    await server.stop();
  }
  console.log('\nMiniLM-shaped random BERT (6 layers, hidden 384, vocab 30522), MEAN pooling + normalize; CPU');
  console.log('tokens  conc  reqs  ortllm/s  p50/p99 ms     fail  t.js/s    p50/p99 ms     ortllm/t.js');
  for (const row of rows) console.log(row);
  console.log(`Each cell: the best of ${repeats} alternating runs per side.`);
  console.log('ortllm: HTTP /v1/embeddings, one input per request, the server packs concurrent requests into shared forwards.');
  console.log('transformers.js: in-process feature-extraction pipeline, inputs in batches of the concurrency (no HTTP).');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
