// `npm run bench:lora`: multi-LoRA serving over HTTP, in one run per model shape:
//   - ortllm, 32 streams on the base model against 32 streams spread evenly over N adapters (the
//     cost of mixing adapters in one batch);
//   - ortllm with one adapter against llama.cpp's llama-server started with `--lora` on the same
//     GGUF base and GGUF adapter (llama-server applies it to every request), at 1 and 32 streams.
// Adapters are seeded random ones (every linear of every layer) written as llama.cpp GGUF adapters.
//
//   npm run bench:lora -- [--models 100m,1b] [--adapters 4] [--rank 16] [--max-tokens 64]
//     [--requests 64] [--peer llama-server PATH | --peer none] [--peer-threads N]
//   ortllm's forward-pass thread count comes from VLLM_CPU_OMP_THREADS_BIND, as for the server.
import { existsSync, mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { LORA_MODULES } from '../src/model/lora/lora-weights';
import { writeRandomGgufAdapter } from '../src/model/lora/write-adapter';
import { writePromptsFile } from './long-prompts';
import { freePort, startPolled, startServer } from './processes';
import { BENCH_SHAPES, ensureBenchModel, type BenchShape } from './random-model';
import { threadsLine } from './runner-ceiling';
import { fmt, measure, printTable, ratio, SHORT_PROMPTS, type Point, type Server } from './serve-points';

const repoRoot = resolve(__dirname, '..', '..');
const cacheDir = join(repoRoot, '.bench-cache');
const storiesPath = resolve(repoRoot, '..', 'shared', 'models', 'stories260K.gguf');
const STREAMS = 32;
const CONTEXT = 512;

interface Args {
  models: BenchShape[];
  adapters: number;
  rank: number;
  maxTokens: number;
  requests: number;
  peer: string | null;
  peerThreads: number;
}

function parseArgs(argv: string[]): Args {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const models = (get('--models') ?? '100m,1b').split(',').filter(Boolean);
  for (const m of models) if (!(m in BENCH_SHAPES)) throw new Error(`unknown model '${m}' (${Object.keys(BENCH_SHAPES).join(', ')})`);
  const peerIndex = argv.indexOf('--peer');
  const defaultPeer = join(cacheDir, 'llama.cpp', 'build', 'bin', 'llama-server');
  let peer: string | null = existsSync(defaultPeer) ? defaultPeer : null;
  if (peerIndex >= 0) peer = argv[peerIndex + 1] === 'none' ? null : resolve(argv[peerIndex + 2] ?? '');
  if (peer && !existsSync(peer)) throw new Error(`--peer llama-server PATH: '${peer}' does not exist (bench/build-llama-server.sh builds one)`);
  return {
    models: models as BenchShape[],
    adapters: Number(get('--adapters') ?? 4),
    rank: Number(get('--rank') ?? 16),
    maxTokens: Number(get('--max-tokens') ?? 64),
    requests: Number(get('--requests') ?? 2 * STREAMS),
    peer,
    peerThreads: Number(get('--peer-threads') ?? availableParallelism()),
  };
}

/** The model's N seeded adapters as GGUF files (written once, kept in .bench-cache). */
function ensureAdapters(shape: BenchShape, args: Args): string[] {
  return Array.from({ length: args.adapters }, (_, i) => {
    const file = join(cacheDir, `bench-${shape}-lora-r${args.rank}-${i}.gguf`);
    if (!existsSync(file)) writeRandomGgufAdapter(file, BENCH_SHAPES[shape], { rank: args.rank, alpha: 2 * args.rank, seed: 100 + i, modules: LORA_MODULES });
    return file;
  });
}

async function startOrtllm(model: string, adapters: string[], args: Args): Promise<Server> {
  const modules = adapters.map((file, i) => `a${i}=${file}`);
  const flags = ['--enable-lora', '--max-loras', String(adapters.length), '--max-lora-rank', String(args.rank), '--lora-modules', ...modules];
  const s = await startServer(
    process.execPath,
    [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', model, '--port', '0', '--max-num-seqs', String(STREAMS), '--max-model-len', String(CONTEXT), '--served-model-name', 'bench', '--disable-log-stats', ...flags],
    repoRoot,
    'ortllm',
  );
  return { ...s, label: `ortllm --enable-lora --max-loras ${adapters.length}` };
}

async function startPeer(peer: string, model: string, adapter: string, args: Args): Promise<Server> {
  const port = await freePort();
  const s = await startPolled(
    peer,
    ['-m', model, '--lora', adapter, '-t', String(args.peerThreads), '-np', String(STREAMS), '-c', String(CONTEXT * STREAMS), '--host', '127.0.0.1', '--port', String(port), '--no-webui'],
    port,
    'llama-server',
  );
  return { ...s, label: `llama-server --lora (${args.peerThreads} threads, ${STREAMS} slots)` };
}

/** STREAMS streams spread evenly over `models`, started together: one aggregate point (every output token / the longest run). */
async function spread(server: Server, prompts: string, models: string[], args: Args): Promise<Point> {
  const each = STREAMS / models.length;
  const points = await Promise.all(models.map((m) => measure(server, prompts, args.maxTokens, each, Math.max(each, args.requests / models.length), m)));
  const tokens = points.reduce((n, p) => n + p.total_output_tokens, 0);
  const seconds = Math.max(...points.map((p) => p.duration));
  return { concurrency: STREAMS, completed: points.reduce((n, p) => n + p.completed, 0), failed: points.reduce((n, p) => n + p.failed, 0), output_throughput: tokens / seconds };
}

async function benchModel(shape: BenchShape, prompts: string, args: Args): Promise<void> {
  console.log(`\n=== random ${shape} (Q8_0), ${args.adapters} adapters of rank ${args.rank} on every linear, short prompts, max_tokens ${args.maxTokens}, ignore_eos, greedy`);
  const model = await ensureBenchModel(shape, cacheDir, storiesPath);
  const adapters = ensureAdapters(shape, args);
  const names = adapters.map((_, i) => `a${i}`);
  const ours = await startOrtllm(model, adapters, args);
  const peer = args.peer ? await startPeer(args.peer, model, adapters[0], args) : null;
  try {
    // Warm-up: every adapter once (its first request loads it into a slot and packs its B), then the peer.
    for (const name of names) await measure(ours, prompts, 4, 2, 2, name);
    if (peer) await measure(peer, prompts, 4, 2, 2, 'a0');
    const base = [await measure(ours, prompts, args.maxTokens, 1, 8), await measure(ours, prompts, args.maxTokens, STREAMS, args.requests)];
    const mixed = await spread(ours, prompts, names, args);
    const ourOne: Point[] = [];
    const peerOne: Point[] = [];
    for (const c of [1, STREAMS]) {
      const requests = c === 1 ? 8 : args.requests;
      ourOne.push(await measure(ours, prompts, args.maxTokens, c, requests, 'a0'));
      if (peer) peerOne.push(await measure(peer, prompts, args.maxTokens, c, requests));
    }
    printTable('ortllm, base model', base);
    printTable(`ortllm, ${STREAMS} streams over ${names.join(', ')} (aggregate)`, [mixed]);
    printTable('ortllm, adapter a0', ourOne);
    if (peer) printTable(peer.label, peerOne);
    const line = (label: string, value: number, target: string) => console.log(`  ${label.padEnd(62)} ${fmt(value, 2).padStart(8)}   ${target}`);
    console.log('\nRatios:');
    line(`ortllm ${STREAMS} streams over ${names.length} adapters / ${STREAMS} on the base`, ratio(mixed.output_throughput, base[1].output_throughput), '(target >= 0.8)');
    line('ortllm a0 / base, 1 stream', ratio(ourOne[0].output_throughput, base[0].output_throughput), '');
    line(`ortllm a0 / base, ${STREAMS} streams`, ratio(ourOne[1].output_throughput, base[1].output_throughput), '');
    if (peer) {
      line('ortllm a0 / llama-server --lora a0, 1 stream', ratio(ourOne[0].output_throughput, peerOne[0].output_throughput), '(target >= 1.2)');
      line(`ortllm a0 / llama-server --lora a0, ${STREAMS} streams`, ratio(ourOne[1].output_throughput, peerOne[1].output_throughput), '(target >= 2)');
    }
  } finally {
    await ours.stop();
    await peer?.stop();
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(storiesPath)) throw new Error(`missing ${storiesPath}: the benchmark needs ../shared/models`);
  if (STREAMS % args.adapters !== 0) throw new Error(`--adapters must divide ${STREAMS}`);
  mkdirSync(cacheDir, { recursive: true });
  const prompts = join(cacheDir, 'bench-prompts-short.jsonl');
  writePromptsFile(prompts, SHORT_PROMPTS);
  console.log(`bench:lora: models ${args.models.join(',')}, peer ${args.peer ?? 'none'}`);
  console.log(threadsLine(args.peer ? args.peerThreads : null));
  for (const shape of args.models) await benchModel(shape, prompts, args);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
