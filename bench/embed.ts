// `npm run bench:embed`: embeddings/s and p50/p99 latency at concurrency 1, 8, 32 for 16- and
// 128-token inputs on a MiniLM-shaped random BERT (bench/random-bert.ts), ortllm over HTTP
// (/v1/embeddings, one request per input, the server packs them) against transformers.js
// (@huggingface/transformers, in-process, given the same inputs in batches of the concurrency:
// its own batching, no HTTP). Also the CPU time each side spends per embedding (ortllm's server
// process and the load-generating client apart), which a shared machine's load does not skew the
// way it skews throughput. Prints figures, asserts nothing.
// Knobs: BENCH_EMBED_CONCURRENCY=1,8,32  BENCH_EMBED_TOKENS=16,128  BENCH_EMBED_ROUNDS=4 (requests =
// rounds x concurrency, at least 16)  BENCH_EMBED_REPEATS=3 (alternating runs per cell, best kept)
// BENCH_EMBED_FORMAT=float|base64  BENCH_EMBED_WARMUP=400 (inputs each side embeds before a length's
// cells)  BENCH_SKIP_PEER=1  BENCH_EMBED_DTYPES=float32[,bfloat16] (ortllm's --dtype: one server each,
// each cell's runs alternating between them and the peer; transformers.js always runs float32).
//
// Results, what the cores allow (the FLOP ceiling) and where the time goes: docs/perf/embeddings.md.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { startServer, type RunningServer } from './processes';
import { benchWord, ensureBenchBert } from './random-bert';

const repoRoot = resolve(__dirname, '..', '..');
const peerDir = join(repoRoot, 'bench', 'peer-transformers');
const cacheDir = join(repoRoot, '.bench-cache');

interface Figures {
  embeddingsPerS: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  /** CPU time per embedding: ortllm's server process, or transformers.js (the bench process while it runs). */
  cpuMs: number | null;
  /** ortllm only: the load-generating client's CPU time per request (it shares the cores with the server). */
  clientCpuMs: number | null;
  /** ortllm only: requests per engine step (from vllm:iteration_tokens_total), how well the server packs. */
  perStep: number | null;
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

function summarize(latenciesMs: number[], durationS: number, failed: number, cpuMs: number | null, clientCpuMs: number | null, perStep: number | null = null): Figures {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const n = Math.max(1, latenciesMs.length);
  return {
    embeddingsPerS: latenciesMs.length / durationS,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    failed,
    cpuMs: cpuMs === null ? null : cpuMs / n,
    clientCpuMs: clientCpuMs === null ? null : clientCpuMs / n,
    perStep,
  };
}

/** The engine's steps so far and the tokens they ran (vllm:iteration_tokens_total's count and sum). */
async function stepCounts(baseUrl: string): Promise<{ steps: number; tokens: number } | null> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const value = (suffix: string) => Number(new RegExp(`^vllm:iteration_tokens_total_${suffix}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const steps = value('count');
  const tokens = value('sum');
  return Number.isFinite(steps) && Number.isFinite(tokens) ? { steps, tokens } : null;
}

/** CPU time (ms) a process has used so far, all threads (Linux /proc, in USER_HZ = 100 ticks); null elsewhere. */
function processCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Inputs each side embeds before the first measured cell of a length. The server's per-request
 * JavaScript (Fastify, Nest, validation, tokenizer, metrics, the worker's step) runs interpreted
 * until V8 has seen it often: with 8 warm-up inputs the first cell (16 tokens, concurrency 1, 16
 * requests) was measured on a cold HTTP thread.
 */
const WARMUP_INPUTS = 400;

/** How long settle() watches at a time, and at most in all. */
const SETTLE_WINDOW_MS = 50;
const SETTLE_MAX_MS = 2000;

/**
 * Waits until this process and the server are both idle before either side is measured.
 * transformers.js runs onnxruntime with its default thread pool, whose threads spin on after each
 * run: measured 60-300 ms of one to two cores busy in this process after a pipeline call on this
 * model (20 ms windows). Every ortllm run used to start right after a transformers.js run, inside
 * that spell, and each transformers.js run right after an ortllm run: the load generator's CPU
 * column at concurrency 1 read 4-5 ms per request (0.9 once settled), and transformers.js's
 * concurrency-1 throughput rose by a fifth once its runs began on an idle server.
 */
async function settle(serverPid: number): Promise<void> {
  const deadline = performance.now() + SETTLE_MAX_MS;
  while (performance.now() < deadline) {
    const own0 = ownCpuMs();
    const server0 = processCpuMs(serverPid);
    await new Promise((resolveSleep) => setTimeout(resolveSleep, SETTLE_WINDOW_MS));
    const own = ownCpuMs() - own0;
    const server1 = processCpuMs(serverPid);
    // /proc counts in 10 ms ticks: one tick in a window is noise, not work.
    const serverIdle = server0 === null || server1 === null || server1 - server0 <= 10;
    if (own < SETTLE_WINDOW_MS / 10 && serverIdle) return;
  }
}

/**
 * The client: node:http over keep-alive connections, the lightest HTTP client Node ships. It runs on
 * the cores the server is measured on, and fetch (undici) spent about twice its CPU per request
 * (1.0-1.4 against 0.4-0.7 ms measured at concurrency 32), which would be charged to the server.
 */
function postJson(agent: Agent, url: URL, body: string): Promise<{ ok: boolean; json: unknown }> {
  return new Promise((resolvePost, reject) => {
    const req = httpRequest(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          resolvePost({ ok: res.statusCode === 200, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `concurrency` clients each POSTing one input at a time until every input is embedded. */
async function loadOrtllm(server: RunningServer, inputs: string[], concurrency: number, format: string): Promise<Figures> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(`${server.baseUrl}/v1/embeddings`);
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const steps0 = await stepCounts(server.baseUrl);
  const serverCpu0 = processCpuMs(server.pid);
  const clientCpu0 = ownCpuMs();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < inputs.length) {
        const input = inputs[next++];
        const t0 = performance.now();
        const res = await postJson(agent, url, JSON.stringify({ input, encoding_format: format }));
        const body = res.json as { data?: Array<{ embedding: number[] | string }> };
        if (res.ok && body.data?.[0]?.embedding.length) latencies.push(performance.now() - t0);
        else failed++;
      }
    }),
  );
  const durationS = (performance.now() - started) / 1000;
  const serverCpu1 = processCpuMs(server.pid);
  const clientCpu = ownCpuMs() - clientCpu0;
  agent.destroy();
  const steps1 = await stepCounts(server.baseUrl);
  const perStep = steps0 && steps1 && steps1.steps > steps0.steps ? latencies.length / (steps1.steps - steps0.steps) : null;
  return summarize(latencies, durationS, failed, serverCpu0 === null || serverCpu1 === null ? null : serverCpu1 - serverCpu0, clientCpu, perStep);
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
  const cpu0 = ownCpuMs();
  const started = performance.now();
  for (let at = 0; at < inputs.length; at += concurrency) {
    const batch = inputs.slice(at, at + concurrency);
    const t0 = performance.now();
    const out = await extractor(batch, { pooling: 'mean', normalize: true });
    if (out.dims[0] !== batch.length) throw new Error(`transformers.js returned ${out.dims[0]} embeddings for ${batch.length} inputs`);
    const ms = performance.now() - t0;
    for (let i = 0; i < batch.length; i++) latencies.push(ms);
  }
  const durationS = (performance.now() - started) / 1000;
  return summarize(latencies, durationS, 0, ownCpuMs() - cpu0, null);
}

/**
 * Both sides must compute the same thing: their embeddings of a few inputs agree (float32: to 1e-3
 * per component; bfloat16 weights and activations: to a cosine of 0.999, as the e2e test holds it).
 */
async function checkSameEmbeddings(baseUrl: string, extractor: Extractor, dtype: string): Promise<void> {
  const inputs = texts(3, 24, 12345);
  const res = await fetch(`${baseUrl}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: inputs, encoding_format: 'float' }) });
  const ours = ((await res.json()) as { data: Array<{ embedding: number[] }> }).data.map((d) => d.embedding);
  const theirs = (await extractor(inputs, { pooling: 'mean', normalize: true })) as unknown as { tolist(): number[][] };
  const rows = theirs.tolist();
  const worst = Math.max(...rows.flatMap((row, i) => row.map((v, j) => Math.abs(v - ours[i][j]))));
  // Both sides' embeddings are normalized: the cosine is the dot product.
  const cosine = Math.min(...rows.map((row, i) => row.reduce((sum, v, j) => sum + v * ours[i][j], 0)));
  console.log(`same weights, same inputs, ortllm ${dtype}: largest |ortllm - transformers.js| embedding difference ${worst.toExponential(2)}, least cosine ${cosine.toFixed(6)}`);
  if (dtype === 'bfloat16' ? !(cosine >= 0.999) : !(worst < 1e-3)) throw new Error('ortllm and transformers.js disagree: the comparison would be meaningless');
}

/** Each side's runs of one cell: throughput and latency from the fastest run, CPU per embedding the median of all. */
function cellFigures(runs: Figures[]): Figures {
  const fastest = runs.reduce((a, b) => (b.embeddingsPerS > a.embeddingsPerS ? b : a));
  const median = (values: Array<number | null>): number | null => {
    const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
    return known.length === 0 ? null : known[Math.floor(known.length / 2)];
  };
  return { ...fastest, cpuMs: median(runs.map((r) => r.cpuMs)), clientCpuMs: median(runs.map((r) => r.clientCpuMs)), perStep: median(runs.map((r) => r.perStep)) };
}

function fmt(n: number | null | undefined, digits = 1): string {
  return n !== null && n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

function load(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
}

async function main(): Promise<void> {
  const levels = envNumbers('BENCH_EMBED_CONCURRENCY', '1,8,32');
  const lengths = envNumbers('BENCH_EMBED_TOKENS', '16,128');
  const rounds = envNumbers('BENCH_EMBED_ROUNDS', '4')[0] ?? 4;
  const repeats = envNumbers('BENCH_EMBED_REPEATS', '3')[0] ?? 3;
  const format = process.env.BENCH_EMBED_FORMAT === 'base64' ? 'base64' : 'float';
  const warmup = envNumbers('BENCH_EMBED_WARMUP', String(WARMUP_INPUTS))[0] ?? WARMUP_INPUTS;
  const dtypes = (process.env.BENCH_EMBED_DTYPES ?? 'float32').split(',');
  if (dtypes.some((d) => d !== 'float32' && d !== 'bfloat16')) throw new Error('BENCH_EMBED_DTYPES: float32 and/or bfloat16');
  const modelDir = ensureBenchBert(cacheDir);
  const servers: RunningServer[] = [];
  for (const dtype of dtypes) {
    const args = [join(repoRoot, 'dist/src/main.js'), 'serve', modelDir, '--host', '127.0.0.1', '--port', '0', '--disable-uvicorn-access-log', '--dtype', dtype];
    servers.push(await startServer(process.execPath, args, repoRoot, `ortllm-${dtype}`));
  }
  const peer = process.env.BENCH_SKIP_PEER ? null : await loadPeer(modelDir);
  const loadBefore = load();
  console.log(`load average (1, 5, 15 min) before: ${loadBefore}`);
  const rows: string[] = [];
  try {
    if (peer) for (let d = 0; d < dtypes.length; d++) await checkSameEmbeddings(servers[d].baseUrl, peer, dtypes[d]);
    for (const tokens of lengths) {
      // Warm both up on inputs of this length: session creation, first-run allocations, and V8's
      // tiering of each side's JavaScript (see WARMUP_INPUTS).
      for (const server of servers) await loadOrtllm(server, texts(warmup, tokens, 999), 8, format);
      if (peer) await loadTransformersJs(peer, texts(warmup, tokens, 999), 8);
      for (const concurrency of levels) {
        const inputs = texts(Math.max(16, rounds * concurrency), tokens, concurrency);
        // Alternate the two sides `repeats` times and keep each side's best run: on a machine shared
        // with other work, load comes and goes, and alternating exposes both to the same spells.
        const ourRuns: Figures[][] = servers.map(() => []);
        const theirRuns: Figures[] = [];
        for (let r = 0; r < repeats; r++) {
          for (let d = 0; d < servers.length; d++) {
            await settle(servers[d].pid);
            ourRuns[d].push(await loadOrtllm(servers[d], inputs, concurrency, format));
          }
          if (!peer) continue;
          await settle(servers[0].pid);
          theirRuns.push(await loadTransformersJs(peer, inputs, concurrency));
        }
        const theirs = peer ? cellFigures(theirRuns) : null;
        for (let d = 0; d < servers.length; d++) {
          const ours = cellFigures(ourRuns[d]);
          rows.push(
            [
              String(tokens).padStart(6),
              String(concurrency).padStart(4),
              dtypes[d].padStart(8),
              String(inputs.length).padStart(5),
              fmt(ours.embeddingsPerS).padStart(9),
              `${fmt(ours.p50Ms, 0)}/${fmt(ours.p99Ms, 0)}`.padStart(11),
              String(ours.failed).padStart(4),
              fmt(ours.perStep).padStart(5),
              fmt(theirs?.embeddingsPerS).padStart(8),
              (theirs ? `${fmt(theirs.p50Ms, 0)}/${fmt(theirs.p99Ms, 0)}` : 'n/a').padStart(11),
              (theirs ? fmt(ours.embeddingsPerS / theirs.embeddingsPerS, 2) : 'n/a').padStart(7),
              fmt(ours.cpuMs, 2).padStart(8),
              fmt(ours.clientCpuMs, 2).padStart(7),
              fmt(theirs?.cpuMs, 2).padStart(7),
            ].join('  '),
          );
          console.log(rows[rows.length - 1]);
        }
      }
    }
  } finally {
    for (const server of servers) await server.stop();
  }
  console.log(`\nMiniLM-shaped random BERT (6 layers, hidden 384, vocab 30522), MEAN pooling + normalize; CPU; encoding_format ${format}`);
  console.log('                                                                                         CPU ms per embedding');
  console.log('tokens  conc     dtype   reqs  ortllm/s  p50/p99 ms  fail  /step    t.js/s  p50/p99 ms  ortllm/  server  client     t.js');
  console.log('                                                                                  t.js');
  for (const row of rows) console.log(row);
  console.log(`Each cell: throughput and latency of the best of ${repeats} alternating runs per side, CPU the median run.`);
  console.log('ortllm: HTTP /v1/embeddings, one input per request, the server packs concurrent requests into shared forwards;');
  console.log('  /step = requests per engine step (median run), server = the ortllm process (HTTP thread, engine worker,');
  console.log('  onnxruntime threads), client = the load generator here.');
  console.log('transformers.js: in-process feature-extraction pipeline, inputs in batches of the concurrency (no HTTP),');
  console.log('  float32 in every row (its fp32 ONNX export); dtype is ortllm\'s --dtype (bfloat16: the addon\'s bf16 GEMM).');
  console.log(`load average (1, 5, 15 min): ${loadBefore} before, ${load()} after (${availableParallelism()} cores)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
