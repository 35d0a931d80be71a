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
// What the cores allow (the targets were >= 2x transformers.js at 32 concurrent, >= 0.8x at 1).
// FLOPs per embedding, counting multiply-adds as 2: per token and layer the linear layers
// 2(4H^2 + 2HI) = 3,538,944 (H 384, I 1536) and attention's QK^T and AV 4SH, times 6 layers and S
// tokens: 342.1 MFLOP at 16 tokens, 2.869 GFLOP at 128 (LayerNorm, softmax, GELU under 1%). The
// fp32 FMA peak of these cores (AMD EPYC Zen 5, AVX-512 with 512-bit FMA units), measured by
// `node dist/bench/fma-peak.js` (12 independent vfmadd231ps chains per thread): 264-268 GFLOP per
// CPU-second of a thread (64 FLOP per cycle at ~4.1 GHz; ymm 131-135), 529 GFLOP/s over wall time
// with both cores, i.e. at most ~1,570 embeddings/s at 16 tokens and ~187/s at 128.
// transformers.js at 32 concurrent: 891-939 embeddings/s at 16 tokens = 305-321 GFLOP/s (57-60%
// of that peak); 96/s at 128 tokens = 275 GFLOP/s (52%). Twice that is 610-642 and 551 GFLOP/s,
// above the peak: >= 2x at 32 concurrent is out of reach for the same fp32 weights on 2 of these
// cores, whatever the serving. ortllm reached 771/s at 16 tokens (264 GFLOP/s, the HTTP server
// and the load generator on the same cores) and 118/s at 128 (339 GFLOP/s). Its forward alone
// (bench/embed-forward, 14 x 16 tokens, one thread) runs its Gemms at 217 GFLOP per CPU-second
// (83% of a core's peak) and the whole forward at 187; at 32 concurrent the server spent 2.5-3.0
// ms of CPU per 16-token embedding, 1.8 of them in onnxruntime. A lone 16-token forward is bound
// by streaming the weights (42 MB of fp32 per forward against 24-27 GB/s from one thread, 35-37
// from two), not by FLOPs. At concurrency 1 the HTTP round trip (client, Fastify/Nest, tokenizer,
// the hop to the engine worker and back; ~1.5-2 ms of a 4-6 ms request) is on top of a forward
// that costs both sides the same, so 0.8x there needs the forward faster than transformers.js's.
// Where a warm concurrency-1 request's CPU went (16 tokens, per-thread /proc times over 1,500-3,000
// sequential requests, perf for the split): the HTTP thread 1.1-1.4 ms (Fastify and Nest, class-
// validator, tokenizer, metrics, response serialization and socket writes, each 5-15% of it), V8's
// background threads 0.4, the engine worker 3.0-3.4 (~90% of it onnxruntime: the calling thread's
// share of the forward), onnxruntime's other intra-op thread 1.5-2.0. Gemm is 89% of the forward's
// node time (onnxruntime's profiler); a lone 1x16 forward took p50 3.7-3.9 ms alone against a
// served request's 6.0 at the time.
// bfloat16 (BENCH_EMBED_DTYPES=float32,bfloat16; the addon's AVX512-BF16 GEMM, VDPBF16PS at twice
// the fp32 FMA rate, half the weight bytes) lifts ortllm to 0.71 / 0.84 / 0.88x transformers.js
// at 16 tokens and 1.02 / 1.56 / 1.76x at 128 (c1 / c8 / c32; float32 in the same runs 0.55 /
// 0.58 / 0.67 and 0.89 / 1.08 / 1.22), at half the server CPU per embedding; with the encoder
// attention on the same kernel (native/src/bf16-encoder-attention.cc) 128 tokens at c32 reached
// 2.05-2.10x (8.6 ms of server CPU per embedding against transformers.js's 19.7-20.2): figures in
// src/model/runner/bf16-pooling-runner.ts. transformers.js stays float32 (its fp32 export).
// The HTTP thread's per-request cost (common/validation-fast-path.ts, the float lists in
// serving/pooling/pooled-vectors.ts), 16 tokens, two rounds alternating with the build before, load
// average ~8 (BENCH_SKIP_PEER=1, c1 400 requests, c32 1,536): server CPU ms per embedding c1
// float32 7.13 / 6.80 -> 7.05 / 7.22, bfloat16 3.23 / 2.95 -> 3.17 / 2.67; c32 float32 2.90 / 2.94
// -> 3.12 / 2.73, bfloat16 1.73 / 1.82 -> 1.82 / 1.61; embeddings/s c1 bfloat16 236 / 304 -> 270 /
// 357, c32 bfloat16 484 / 674 -> 414 / 773. The ~25-50 us saved a request is inside this noise;
// bench/http-overhead isolates it.
// Where a 16-token bfloat16 embedding's server CPU went at 32 concurrent (per-thread /proc times
// over 3,000 requests, four runs; --cpu-prof of each thread for the split, its figures inflated by
// the profiler): 1.38-1.57 ms in all = the engine worker 0.61-0.78 (the forward's calling thread:
// GEMMs ~75%, attention and LayerNorms ~10%, the engine's own JS ~3%, postMessage ~1%), the addon's
// second GEMM thread 0.33-0.37, the HTTP thread 0.27-0.36, V8's helper threads ~0.1; the load
// generator 0.15-0.20 on the same cores. The HTTP thread's share, profiled: Fastify (routing, hooks,
// content-type parsing, reply) ~0.12 ms with JSON.stringify of the 384 floats ~0.08 of it, the
// tokenizer (@huggingface/tokenizers: BertNormalizer, pre-tokenizer, WordPiece, each a few us)
// ~0.06-0.10, the socket write ~0.06, garbage collection ~0.06, Nest, validation, serving, metrics
// and AbortSignals ~0.02 each. At concurrency 1 the same HTTP-thread work costs 0.8-1.0 ms a request
// (0.06 of it system time): the forward between two requests evicts its code and data from cache.
// Taken from that (interleaved with the build before, 16 tokens, bfloat16, 1,200 requests at c1 and
// 3,000 at c32, three rounds, load average ~3; embeddings/s and server CPU ms per embedding): c1
// 324 / 347 / 369 -> 370 / 348 / 282 (2.96 / 2.88 / 2.52 -> 2.58 / 2.43 / 2.83 ms), c32 1022 / 1118
// / 1026 -> 1132 / 821 / 1024 (1.57 / 1.45 / 1.41 -> 1.38 / 1.39 / 1.41 ms); bench/http-overhead's
// in-process HTTP thread per request 0.280 / 0.306 -> 0.254 / 0.207 ms: the bfloat16 runner's
// embeddings and pooling without onnxruntime (runner/bf16-pooling-runner.ts), one-prompt requests
// without a group AbortController (serving/pooling/encode-all.ts), and the float lists written by
// the addon (serving/pooling/float-json.ts, 16 us against JSON.stringify's 33 for 384 floats).
// After (one profiled run, c32, 4,000 requests, 1,141/s): server 1.44 ms per embedding, the HTTP
// thread 0.24 (Fastify ~0.02 with no serializer left to run, float32Json ~0.03, the tokenizer
// ~0.05, the socket write ~0.03, GC ~0.03), the engine worker 0.62 (the forward's embeddings 0.02,
// pooling under 0.01), the second GEMM thread 0.34.
// Not taken: a WordPiece memo (the bench's words are whole vocabulary entries, found at the first
// lookup: 22-27 us a text either way); the bfloat16 GEMMs on one thread at c32 (five interleaved
// rounds: server CPU 1.34-1.53 against 1.41-1.59 ms, embeddings/s 491-985 against 517-1114: noise).
// Why >= 2x at 32 concurrent stays out of reach at 16 tokens: transformers.js ran 868-939/s, so 2x
// is 1,740-1,880/s, at most 1.06-1.15 ms of CPU per embedding on two cores, the load generator's
// 0.15-0.20 included; the bfloat16 forward alone (runner alone, 32x16, one thread) is 0.85-0.91 ms
// per embedding with its GEMMs at ~80% of VDPBF16PS's peak, which leaves ~0.05 ms for HTTP, the
// tokenizer and the hop to the engine, against the HTTP thread's 0.27-0.36 measured. It would take
// fewer FLOPs per embedding (int8 weights and activations), i.e. other numerics than the model's.
//
// On an AVX2-only CPU (AMD EPYC Zen 1, 2 cores, 256-bit ops split in two halves; bfloat16 is refused
// there, so float32 only). `node dist/bench/fma-peak.js`: ymm 39.7 GFLOP per CPU-second of a
// thread, i.e. at most 232 embeddings/s at 16 tokens and 28/s at 128 on both cores (8.6 and 72 ms
// of CPU per embedding). Served, `BENCH_EMBED_TOKENS=16 node dist/bench/embed.js` and
// `BENCH_EMBED_TOKENS=128 BENCH_EMBED_WARMUP=64 node dist/bench/embed.js` (one length per 4-minute
// bench-lock hold), two rounds, load average 4-6 from other sessions (compiles, benches), ortllm /
// transformers.js embeddings/s (ratio), server / transformers.js CPU ms per embedding:
//   16 tokens   c1  25.8 / 18.5 (1.40), 47.5 / 19.7 (2.42)   18.1 / 26.5, 18.1 / 26.8
//               c8  58.3 / 32.3 (1.81), 44.7 / 23.6 (1.89)   15.9 / 19.9, 15.6 / 20.2
//               c32 36.6 / 31.8 (1.15), 43.9 / 39.8 (1.10)   14.0 / 15.9, 14.0 / 16.4
//   128 tokens  c1  7.4 / 4.7 (1.56),   6.7 / 3.6 (1.86)     121 / 164,   120 / 181
//               c8  7.4 / 5.2 (1.43),   9.1 / 6.4 (1.42)     105 / 128,   108 / 140
//               c32 6.8 / 6.1 (1.11),   10.2 / 9.4 (1.08)    103 / 114,   106 / 118
// (an earlier run at load ~6: 16 tokens c1 1.78, c8 1.50, c32 1.33; 128 tokens c1 0.95). >= 0.8x at
// concurrency 1 holds in every row; >= 2x at 32 concurrent does not, and cannot in float32: half of
// transformers.js's CPU per embedding at c32 is 8.0-8.2 ms at 16 tokens and 57-59 at 128, below
// what the forward's FLOPs alone cost at the FMA peak (8.6 and 72 ms). Where the time goes:
// - The runner alone (`THREADS=1,2 REPS=8 SHAPES=1x16,32x16,1x128,16x128 node
//   dist/bench/embed-forward.js`, load ~5), one thread, CPU ms per sequence: 1x16 12.2, 32x16 10.2
//   (33.6 GFLOP/s, 85% of the peak), 1x128 86.2, 16x128 88.5 (in runs of 4 x 128; 82%); the
//   transformers.js export under the same settings 12.3, 10.2, 87.2, 96.8. Two threads: 8-12% more
//   CPU per sequence, wall time shorter only at 1x16 (13.5 against 16.5 ms; the other core was held
//   by other sessions).
// - onnxruntime's profiler (one thread, 5 runs a shape): Gemm 89 / 90 / 85 / 82% of the run at
//   1x16 / 32x16 / 1x128 / 4x128, Gelu 2-6%, Attention 2% at 16 tokens and 8-10% at 128,
//   LayerNormalization ~1%, outside kernels under 3%; perf of 32x16: 75% of all samples in one
//   8 KB page of libonnxruntime (MLAS's SGEMM FMA kernel), its packing ~2%. The forward is one
//   session run (the float32 graph is whole; only bfloat16 is cut into segments), already at
//   82-85% of the FMA peak: no fewer/larger runs or hand-written GEMM has much left to take.
// - Served, per thread (/proc/<pid>/task, 300 requests after 100, 16 tokens, c1 / c32, two rounds):
//   the engine worker (the forward's calling thread) 8.4-8.9 / 6.1-7.0 ms, onnxruntime's second
//   intra-op thread 5.8-5.9 / 4.9-5.5, the HTTP thread 1.8-1.9 / 0.9-1.0, the rest 0.3-0.5; the
//   forward's two threads 14.2-14.6 / 11.4-12.2 ms against 12.2 / 10.2 on one. Packing: each step
//   takes every waiting request (pooling-core.ts), 14.2 requests per step at c32 (the clients split
//   into two groups, one in the forward while the other's responses go out), 4.0 at c8; the bench's
//   inputs share a length, so there is no padding. One intra-op thread (VLLM_CPU_OMP_THREADS_BIND=0,
//   interleaved with the default, two rounds): server CPU 15.0-15.1 / 12.3-12.4 ms per request
//   against 16.5-17.0 / 13.5-13.8, embeddings/s c1 52.1, 52.7 against 56.9, 50.4 and c32 48.8,
//   48.0 against 72.4, 44.7: ~10% less CPU, throughput within this load's noise; the engine's
//   thread count (core-host.ts) is left as it is.

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
