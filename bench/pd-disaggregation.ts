// `npm run bench:pd`: prefill/decode disaggregation served over HTTP. One ortllm replica, then a
// prefill and a decode replica (--kv-transfer-config TcpConnector) behind bench/pd-proxy.ts, each
// under the same closed loop of `--concurrency` streams of distinct ~`--prompt-len`-token prompts
// on a random-weights GGUF of a realistic width. Prints TTFT and inter-token latency p50/p99 of
// both (the client's view of the decode replica's stream), then pulls `--transfers` prefills'
// blocks directly with a TcpConnector: KV bytes per prompt token and transfer time per block (and
// the decode replica's own transfer metrics under the load).
// Both setups run on the same machine: the pair's two replicas share its cores, or with
// --split-cores each gets half of them (taskset, and as many forward-pass threads), as two
// machines of half the size would.
//
//   npm run bench:pd -- [--shape 100m] [--concurrency 16] [--requests 32] [--prompt-len 700]
//     [--max-tokens 64] [--transfers 8] [--kv-cache-dtype float16] [--split-cores]

import { mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { promptHashes } from '../src/engine/core/kv-transfer-agent';
import { normalizeKvTransferConfig } from '../src/engine/kv-transfer/kv-transfer-config';
import { TcpConnector } from '../src/engine/kv-transfer/tcp-connector';
import { loadTokenizer } from '../src/model/load-model';
import { KV_STORAGE, type KvStorageDtype } from '../src/model/runner/kv-dtype';
import type { KvBlockStore } from '../src/model/types';
import { longPrompts, writePromptsFile } from './long-prompts';
import { startPdProxy } from './pd-proxy';
import { startServer } from './processes';
import { BENCH_SHAPES, ensureBenchModel, type BenchShape } from './random-model';
import { fmt, measure, type Point, type Server } from './serve-points';

const repoRoot = resolve(__dirname, '..', '..');
const cacheDir = join(repoRoot, '.bench-cache');
const storiesPath = resolve(repoRoot, '..', 'shared', 'models', 'stories260K.gguf');
const BLOCK_SIZE = 16;

interface Args {
  shape: BenchShape;
  concurrency: number;
  requests: number;
  promptLen: number;
  maxTokens: number;
  transfers: number;
  kvCacheDtype: KvStorageDtype;
  splitCores: boolean;
}

function parseArgs(argv: string[]): Args {
  const get = (flag: string, fallback: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : fallback;
  };
  const shape = get('--shape', '100m') as BenchShape;
  if (!(shape in BENCH_SHAPES)) throw new Error(`--shape: one of ${Object.keys(BENCH_SHAPES).join(', ')}`);
  if (!(get('--kv-cache-dtype', 'float16') in KV_STORAGE)) throw new Error(`--kv-cache-dtype: one of ${Object.keys(KV_STORAGE).join(', ')}`);
  return {
    shape,
    concurrency: Number(get('--concurrency', '16')),
    requests: Number(get('--requests', '32')),
    promptLen: Number(get('--prompt-len', '700')),
    maxTokens: Number(get('--max-tokens', '64')),
    transfers: Number(get('--transfers', '8')),
    kvCacheDtype: get('--kv-cache-dtype', 'float16') as KvStorageDtype,
    splitCores: argv.includes('--split-cores'),
  };
}

/** `cores`: the CPUs (e.g. "0-3") the replica is pinned to and threads over; absent: all of them. */
async function startReplica(args: Args, modelPath: string, label: string, extra: string[] = [], cores?: string): Promise<Server> {
  const argv = [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', modelPath, '--host', '127.0.0.1', '--port', '0', '--served-model-name', 'bench'];
  argv.push('--max-num-seqs', String(args.concurrency), '--max-model-len', String(args.promptLen + args.maxTokens + 64), '--kv-cache-dtype', args.kvCacheDtype, '--disable-log-stats', ...extra);
  if (!cores) return { ...(await startServer(process.execPath, argv, repoRoot, label)), label };
  const env = { ...process.env, VLLM_CPU_OMP_THREADS_BIND: cores };
  return { ...(await startServer('taskset', ['-c', cores, process.execPath, ...argv], repoRoot, label, undefined, env)), label };
}

/** Each half of the machine's CPUs as a list, for the prefill and the decode replica. */
function halves(): [string, string] {
  const n = availableParallelism();
  if (n < 2) throw new Error('--split-cores needs at least 2 CPUs');
  const half = Math.floor(n / 2);
  const list = (from: number, to: number) => (from === to ? String(from) : `${from}-${to}`);
  return [list(0, half - 1), list(half, n - 1)];
}

const KV_BOTH = JSON.stringify({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_port: 0 });

/** Prefills each prompt for a remote decode and pulls its blocks with a TcpConnector of our own: bytes and time per block. */
async function measureTransfers(args: Args, prefillUrl: string, prompts: string[]): Promise<{ bytesPerToken: number; msPerBlock: number; mibPerS: number; blocks: number }> {
  const config = BENCH_SHAPES[args.shape];
  const shape = { num_layers: config.numLayers, num_kv_heads: config.numKvHeads, head_dim: config.headDim, block_size: BLOCK_SIZE, kv_dtype: args.kvCacheDtype, pools: [{ layers: config.numLayers, window: 0 }] };
  const blockBytes = 2 * config.numLayers * BLOCK_SIZE * config.numKvHeads * config.headDim * KV_STORAGE[args.kvCacheDtype].bytesPerElement;
  const store: KvBlockStore = { dtype: args.kvCacheDtype, blockBytes: () => blockBytes, readBlock: () => Buffer.alloc(0), writeBlock: () => undefined };
  const consumer = new TcpConnector({
    config: normalizeKvTransferConfig({ kv_connector: 'TcpConnector', kv_role: 'kv_consumer', engine_id: 'bench' }, ['TcpConnector'], {}),
    shape,
    blocks: store,
    defaultHost: '127.0.0.1',
    release: () => undefined,
  });
  let bytes = 0;
  let tokens = 0;
  let blocks = 0;
  let ms = 0;
  for (const prompt of prompts) {
    const res = await fetch(`${prefillUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench', prompt, max_tokens: 1, return_token_ids: true, kv_transfer_params: { do_remote_decode: true } }),
    });
    const body = (await res.json()) as { choices: Array<{ prompt_token_ids: number[] }>; kv_transfer_params: Record<string, unknown> };
    const tokenIds = body.choices[0].prompt_token_ids;
    const params = body.kv_transfer_params;
    const started = performance.now();
    const pulled = await consumer.pull({
      source: { engineId: params.remote_engine_id as string, requestId: params.remote_request_id as string, host: params.remote_host as string, port: params.remote_port as number, blockIds: [] },
      hashes: promptHashes({ tokenIds, numPromptTokens: tokenIds.length, cacheSalt: null, loraKey: null }, BLOCK_SIZE),
      firstBlock: 0,
    });
    ms += performance.now() - started;
    bytes += pulled.reduce((n, b) => n + b.length, 0);
    blocks += pulled.length;
    tokens += tokenIds.length;
  }
  await consumer.close();
  return { bytesPerToken: bytes / tokens, msPerBlock: ms / blocks, mibPerS: bytes / 2 ** 20 / (ms / 1000), blocks };
}

function row(label: string, p: Point): string {
  return `${label.padEnd(34)} ${`${fmt(p.median_ttft_ms)}/${fmt(p.p99_ttft_ms)}`.padStart(17)} ${`${fmt(p.median_itl_ms)}/${fmt(p.p99_itl_ms)}`.padStart(15)} ${fmt(p.output_throughput).padStart(10)} ${String(p.completed).padStart(5)} ${String(p.failed).padStart(5)}`;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  mkdirSync(cacheDir, { recursive: true });
  const modelPath = await ensureBenchModel(args.shape, cacheDir, storiesPath);
  const { tokenizer } = await loadTokenizer(storiesPath);
  const prompts = longPrompts(tokenizer, 2 * args.requests + args.transfers, args.promptLen);
  const files = [0, 1].map((i) => {
    const file = join(cacheDir, `pd-prompts-${args.promptLen}-${i}.jsonl`);
    writePromptsFile(file, prompts.slice(i * args.requests, (i + 1) * args.requests));
    return file;
  });
  console.log(`bench:pd: ${args.shape} (${args.kvCacheDtype} KV), ${args.requests} requests of ~${args.promptLen} prompt tokens and ${args.maxTokens} output tokens, ${args.concurrency} at a time`);

  const single = await startReplica(args, modelPath, 'one replica');
  const alone = await measure(single, files[0], args.maxTokens, args.concurrency, args.requests);
  await single.stop();

  const [prefillCores, decodeCores] = args.splitCores ? halves() : [undefined, undefined];
  const [prefill, decode] = await Promise.all([
    startReplica(args, modelPath, 'prefill', ['--kv-transfer-config', KV_BOTH], prefillCores),
    startReplica(args, modelPath, 'decode', ['--kv-transfer-config', KV_BOTH], decodeCores),
  ]);
  const proxy = await startPdProxy({ prefillUrl: prefill.baseUrl, decodeUrl: decode.baseUrl });
  try {
    const paired = await measure({ ...decode, baseUrl: proxy.baseUrl, label: args.splitCores ? `prefill (CPUs ${prefillCores}) + decode (CPUs ${decodeCores})` : 'prefill + decode' }, files[1], args.maxTokens, args.concurrency, args.requests);
    const metrics = await (await fetch(`${decode.baseUrl}/metrics`)).text();
    const counter = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)`, 'm').exec(metrics)?.[1] ?? NaN);
    const pulls = counter('vllm:nixl_xfer_time_seconds_count');
    const pullSeconds = counter('vllm:nixl_xfer_time_seconds_sum');
    const pulledBytes = counter('vllm:nixl_bytes_transferred_sum');
    const transfers = await measureTransfers(args, prefill.baseUrl, prompts.slice(2 * args.requests));

    console.log(`\n${'setup'.padEnd(34)} ${'TTFT p50/p99 ms'.padStart(17)} ${'ITL p50/p99 ms'.padStart(15)} ${'out tok/s'.padStart(10)} ${'done'.padStart(5)} ${'fail'.padStart(5)}`);
    console.log(row('one replica', alone));
    console.log(row('prefill + decode (proxy)', paired));
    const { prefillMs, decodeFirstBytesMs } = proxy.timings;
    console.log(`  of its TTFT: the prefill replica's answer ${percentiles(prefillMs)} ms, then the decode replica's first bytes (pull + first step) ${percentiles(decodeFirstBytesMs)} ms (p50/p99)`);
    const promptTokens = counter('vllm:prompt_tokens_total');
    const cached = counter('vllm:prompt_tokens_cached_total');
    console.log(`\ndecode replica: ${fmt(cached, 0)} of ${fmt(promptTokens, 0)} prompt tokens pulled, not computed (${fmt((100 * cached) / promptTokens)}%)`);
    console.log(`under load, per pull (decode replica's vllm:nixl_* metrics, ${fmt(pulls, 0)} pulls): ${fmt((1000 * pullSeconds) / pulls)} ms, ${fmt(pulledBytes / pulls / 2 ** 20)} MiB, ${fmt(pulledBytes / 2 ** 20 / pullSeconds, 0)} MiB/s`);
    console.log(`KV bytes moved per prompt token: ${fmt(transfers.bytesPerToken, 0)} (blocks of ${BLOCK_SIZE} tokens, partial last blocks included)`);
    console.log(`transfer time per block (loopback TCP, ${transfers.blocks} blocks): ${fmt(transfers.msPerBlock, 3)} ms, ${fmt(transfers.mibPerS, 0)} MiB/s`);
  } finally {
    await proxy.close();
    await Promise.all([prefill.stop(), decode.stop()]);
  }
}

function percentiles(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return `${fmt(at(0.5), 0)}/${fmt(at(0.99), 0)}`;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
