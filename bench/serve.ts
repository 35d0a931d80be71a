// `npm run bench`: ortllm against llama.cpp on the same GGUF files, both measured over HTTP by
// `ortllm bench serve` (runBenchmark: the same client, dataset and report for both), in one run:
// both servers stay up and each measurement point alternates between them (best of --repeat),
// because this machine's load moves the absolute numbers. Prints per-point tables and the ratios
// the performance targets are stated in.
//
//   npm run bench -- [--models stories,100m,1b,qwen3-0.6b,moe] [--prompts short,long] [--prompt-len 700]
//     [--concurrency 1,8,32] [--max-tokens 64] [--repeat 2]
//     [--peer llama-server PATH | --peer llama-node | --peer none] [--peer-threads N]
//     [--ortllm-args "--kv-cache-dtype float16 ..."]
//   ortllm's forward-pass thread count comes from VLLM_CPU_OMP_THREADS_BIND, as for the server.
//
// The llama-server peer is the real server built from llama.cpp's source
// (bench/build-llama-server.sh builds it into .bench-cache/llama.cpp); llama-node is
// @fugood/llama.node behind bench/peer/llama-server.js (installed on first use, 1 thread).
// Older environment knobs still work: BENCH_MODELS, BENCH_CONCURRENCY, BENCH_MAX_TOKENS,
// BENCH_SKIP_PEER=1.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { loadTokenizer } from '../src/model/load-model';
import { longPrompts, writePromptsFile } from './long-prompts';
import { freePort, peakRssMiB, startPolled, startServer } from './processes';
import { fmt, measure, printTable, ratio, SHORT_PROMPTS, type Point, type Server } from './serve-points';
import { BENCH_SHAPES, ensureBenchModel, type BenchShape } from './random-model';
import { measureRunner, type RunnerFigures, threadsLine } from './runner-ceiling';

const repoRoot = resolve(__dirname, '..', '..');
const modelsDir = resolve(repoRoot, '..', 'shared', 'models');
const peerDir = join(repoRoot, 'bench', 'peer');
const cacheDir = join(repoRoot, '.bench-cache');
const storiesPath = join(modelsDir, 'stories260K.gguf');


interface Args {
  models: string[];
  prompts: Array<'short' | 'long'>;
  promptLen: number;
  concurrency: number[];
  maxTokens: number;
  repeat: number;
  peer: { kind: 'llama-server'; path: string } | { kind: 'llama-node' } | { kind: 'none' };
  peerThreads: number;
  ortllmArgs: string[];
}

function parseArgs(argv: string[]): Args {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const list = (flag: string, env: string, fallback: string) => (get(flag) ?? process.env[env] ?? fallback).split(',').map((s) => s.trim()).filter(Boolean);
  const peerIndex = argv.indexOf('--peer');
  let peer: Args['peer'] = process.env.BENCH_SKIP_PEER === '1' ? { kind: 'none' } : { kind: 'llama-node' };
  if (peerIndex >= 0) {
    const kind = argv[peerIndex + 1];
    if (kind === 'llama-server') {
      const path = argv[peerIndex + 2];
      if (!path || !existsSync(path)) throw new Error(`--peer llama-server PATH: '${path}' does not exist (bench/build-llama-server.sh builds one)`);
      peer = { kind, path: resolve(path) };
    } else if (kind === 'llama-node' || kind === 'none') {
      peer = { kind };
    } else {
      throw new Error(`--peer: expected llama-server PATH, llama-node or none, got '${kind}'`);
    }
  }
  return {
    models: list('--models', 'BENCH_MODELS', 'stories,100m'),
    prompts: list('--prompts', 'BENCH_PROMPTS', 'short,long') as Args['prompts'],
    promptLen: Number(get('--prompt-len') ?? 700),
    concurrency: list('--concurrency', 'BENCH_CONCURRENCY', '1,8,32').map(Number),
    maxTokens: Number(get('--max-tokens') ?? process.env.BENCH_MAX_TOKENS ?? 64),
    repeat: Number(get('--repeat') ?? 2),
    peer,
    peerThreads: Number(get('--peer-threads') ?? availableParallelism()),
    ortllmArgs: (get('--ortllm-args') ?? '').split(' ').filter(Boolean),
  };
}

/** Best of `repeat` per concurrency level; the servers take turns at every level. */
async function sweep(servers: Server[], w: Workload, args: Args, minRequests: number): Promise<Map<Server, Point[]>> {
  const out = new Map<Server, Point[]>(servers.map((s) => [s, []]));
  for (const s of servers) await measure(s, w.next(2), 4, 2, 2); // warm-up: first-request costs are not measured
  for (const concurrency of args.concurrency) {
    const numRequests = Math.max(minRequests, concurrency);
    const best = new Map<Server, Point>();
    for (let r = 0; r < args.repeat; r++) {
      for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
        const p = await measure(s, w.next(numRequests), args.maxTokens, concurrency, numRequests);
        const prev = best.get(s);
        if (!prev || p.output_throughput > prev.output_throughput) best.set(s, p);
      }
    }
    for (const s of servers) out.get(s)!.push(best.get(s)!);
  }
  return out;
}

function ensureLlamaNode(): void {
  if (existsSync(join(peerDir, 'node_modules', '@fugood', 'llama.node'))) return;
  console.log('Installing the llama.cpp peer (@fugood/llama.node, prebuilt, --omit=optional) ...');
  execFileSync('npm', ['install', '--omit=optional', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: peerDir, stdio: 'inherit' });
}

async function startPeer(args: Args, modelPath: string, ctxPerSeq: number): Promise<Server | null> {
  const slots = Math.max(...args.concurrency);
  if (args.peer.kind === 'none') return null;
  if (args.peer.kind === 'llama-node') {
    ensureLlamaNode();
    const s = await startServer(process.execPath, ['llama-server.js', modelPath, String(slots)], peerDir, 'llama.cpp peer');
    return { ...s, label: 'llama.cpp (@fugood/llama.node, 1 thread)' };
  }
  const port = await freePort();
  const s = await startPolled(
    args.peer.path,
    ['-m', modelPath, '-t', String(args.peerThreads), '-np', String(slots), '-c', String(ctxPerSeq * slots), '--host', '127.0.0.1', '--port', String(port), '--no-webui'],
    port,
    'llama-server',
  );
  return { ...s, label: `llama-server (${args.peerThreads} threads, ${slots} slots)` };
}

async function startOrtllm(args: Args, modelPath: string, ctxPerSeq: number): Promise<Server> {
  const s = await startServer(
    process.execPath,
    [
      join(repoRoot, 'dist', 'src', 'main.js'),
      'serve',
      modelPath,
      '--port',
      '0',
      '--max-num-seqs',
      String(Math.max(...args.concurrency)),
      '--max-model-len',
      String(ctxPerSeq),
      '--served-model-name',
      'bench',
      '--disable-log-stats',
      ...args.ortllmArgs,
    ],
    repoRoot,
    'ortllm',
  );
  return { ...s, label: `ortllm ${args.ortllmArgs.join(' ')}`.trim() };
}

interface Workload {
  name: 'short' | 'long';
  promptLen: number;
  /** A prompts file for the next `n` requests: the short prompts repeat; long prompts are never sent twice. */
  next(n: number): string;
}

async function workloads(args: Args, maxRequests: number): Promise<Workload[]> {
  const out: Workload[] = [];
  const { tokenizer } = await loadTokenizer(storiesPath);
  if (args.prompts.includes('short')) {
    const file = join(cacheDir, 'bench-prompts-short.jsonl');
    writePromptsFile(file, SHORT_PROMPTS);
    const len = SHORT_PROMPTS.reduce((n, p) => n + tokenizer.encode(p).length, 0) / SHORT_PROMPTS.length;
    out.push({ name: 'short', promptLen: len, next: () => file });
  }
  if (args.prompts.includes('long')) {
    // Enough distinct prompts for every request of the run (both servers, every repeat), so
    // neither server's prefix cache ever sees a prompt again.
    const needed = 2 * args.models.length * (args.repeat * args.concurrency.reduce((n, c) => n + Math.max(maxRequests, c), 0) + 4);
    const prompts = longPrompts(tokenizer, needed, args.promptLen);
    let used = 0;
    let files = 0;
    const next = (n: number) => {
      if (used + n > prompts.length) throw new Error('bench: ran out of distinct long prompts');
      const file = join(cacheDir, `bench-prompts-long-${args.promptLen}-${files++ % 4}.jsonl`);
      writePromptsFile(file, prompts.slice(used, (used += n)));
      return file;
    };
    out.push({ name: 'long', promptLen: args.promptLen + 1, next });
  }
  return out;
}

function printRatios(w: Workload, ours: Point[], peer: Point[] | null, runner: RunnerFigures, rss: { ours: number; peer: number }): void {
  const at = (rows: Point[] | null, c: number) => rows?.find((r) => r.concurrency === c);
  const tput = (rows: Point[] | null, c: number) => at(rows, c)?.output_throughput;
  const line = (label: string, value: number, target: string) => console.log(`  ${label.padEnd(58)} ${fmt(value, 2).padStart(8)}   ${target}`);
  console.log(`\nRatios (${w.name} prompts, ~${Math.round(w.promptLen)} tokens):`);
  for (const r of ours) {
    const target = r.concurrency === 1 ? '(target >= 1.2)' : r.concurrency === 32 ? '(target >= 2)' : '';
    if (peer) line(`ortllm / llama.cpp output tok/s at concurrency ${r.concurrency}`, ratio(r.output_throughput, tput(peer, r.concurrency)), target);
  }
  line('ortllm batching gain: tok/s at 32 / at 1', ratio(tput(ours, 32), tput(ours, 1)), w.name === 'short' ? '(target >= 8)' : '(target >= 4)');
  if (peer) line('llama.cpp batching gain: tok/s at 32 / at 1', ratio(tput(peer, 32), tput(peer, 1)), '');
  const single = at(ours, 1);
  if (single) {
    const prefill = (w.promptLen / single.median_ttft_ms) * 1000;
    line(`ortllm prompt tok/s, one request (prompt / TTFT p50 = ${fmt(prefill, 0)})`, prefill / runner.prefillTokS, `of runner-alone ${fmt(runner.prefillTokS, 0)} tok/s (target >= 0.7 at 700)`);
    const peerSingle = at(peer, 1);
    if (peerSingle) line('  ortllm prompt tok/s / llama.cpp prompt tok/s (TTFT ratio)', peerSingle.median_ttft_ms / single.median_ttft_ms, '');
    line(`ortllm TPOT p50 / runner batch-1 step (${fmt(runner.step1Ms, 2)} ms)`, single.median_tpot_ms / runner.step1Ms, '(target <= 1.2)');
    line(`  (against the fastest single runner step, ${fmt(runner.step1MinMs, 2)} ms)`, single.median_tpot_ms / runner.step1MinMs, '');
  }
  line(`ortllm at 32 / runner-alone batch-32 decode (${fmt(runner.decode32TokS, 0)} tok/s)`, ratio(tput(ours, 32), runner.decode32TokS), '');
  if (peer) line(`peak RSS ortllm / llama.cpp (${fmt(rss.ours, 0)} / ${fmt(rss.peer, 0)} MiB)`, rss.ours / rss.peer, '(target <= 1.3 on 1.1B)');
  else console.log(`  peak RSS ortllm ${fmt(rss.ours, 0)} MiB (no peer to compare with)`);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(storiesPath)) throw new Error(`missing ${storiesPath}: the benchmark needs ../shared/models`);
  mkdirSync(cacheDir, { recursive: true });
  console.log(`bench: models ${args.models.join(',')}, prompts ${args.prompts.join(',')}, concurrency ${args.concurrency.join(',')}, max_tokens ${args.maxTokens}, best of ${args.repeat}, peer ${args.peer.kind}`);
  console.log(threadsLine(args.peer.kind === 'none' ? null : args.peerThreads));
  const models: Array<{ label: string; path: string; minRequests: number }> = [];
  for (const name of args.models) {
    if (name === 'stories') models.push({ label: 'stories260K (F32)', path: storiesPath, minRequests: 16 });
    else if (name in BENCH_SHAPES) {
      console.log(`Preparing the ${name} random GGUF (Q8_0) ...`);
      models.push({ label: `random ${name} (Q8_0)`, path: await ensureBenchModel(name as BenchShape, cacheDir, storiesPath), minRequests: 8 });
    } else throw new Error(`unknown model '${name}' (stories, ${Object.keys(BENCH_SHAPES).join(', ')})`);
  }
  const loads = await workloads(args, Math.max(16, ...args.concurrency));
  for (const model of models) {
    for (const w of loads) {
      const ctxPerSeq = Math.max(1024, Math.ceil((w.promptLen + args.maxTokens + 16) / 256) * 256);
      console.log(`\n=== ${model.label}, ${w.name} prompts (~${Math.round(w.promptLen)} tokens), max_tokens ${args.maxTokens}, ignore_eos, greedy`);
      const kvFlag = args.ortllmArgs.indexOf('--kv-cache-dtype');
      const kvCacheDtype = kvFlag >= 0 ? args.ortllmArgs[kvFlag + 1] : undefined;
      const runner = await measureRunner(model.path, { promptLen: Math.round(w.promptLen), decodeTokens: args.maxTokens, context: w.promptLen + args.maxTokens / 2, kvCacheDtype });
      console.log(
        `runner alone: prefill ${fmt(runner.prefillTokS, 0)} tok/s, batch-1 step ${fmt(runner.step1Ms, 2)} ms (mean over a request's decode; fastest step ${fmt(runner.step1MinMs, 2)}), batch-32 decode ${fmt(runner.decode32TokS, 0)} tok/s`,
      );
      const ours = await startOrtllm(args, model.path, ctxPerSeq);
      let peer: Server | null = null;
      try {
        peer = await startPeer(args, model.path, ctxPerSeq);
        const servers = peer ? [ours, peer] : [ours];
        const points = await sweep(servers, w, args, model.minRequests);
        const rss = { ours: peakRssMiB(ours.pid), peer: peer ? peakRssMiB(peer.pid) : NaN };
        printTable(ours.label || 'ortllm', points.get(ours)!);
        if (peer) printTable(peer.label, points.get(peer)!);
        printRatios(w, points.get(ours)!, peer ? points.get(peer)! : null, runner, rss);
      } finally {
        await ours.stop();
        await peer?.stop();
      }
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
