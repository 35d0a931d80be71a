// `npm run bench:spec`: speculative decoding served over HTTP, ortllm against llama.cpp's
// llama-server on the same GGUF files, one server at a time, each point's acceptance read from
// the server's own /metrics counters (vllm:spec_decode_* and llamacpp:spec_decode_*).
//   pair:    the ~90M target of bench/draft-pair.ts (Q8_0), workloads copy, free and sampled, at 1, 8 and 32
//            streams: no speculation, ngram (prompt lookup), ngram with disable_by_batch_size, the
//            1-layer draft model; llama-server plain, --spec-type ngram-simple and -md.
//   scales:  the draft model at 1 stream against targets of other residual scales (acceptance).
//   stories: the trained stories260K (per-step overhead, not bandwidth): plain and ngram.
//
//   npm run bench:spec -- [--parts pair,scales,stories] [--scale 0.1] [--scales 0.05,0.2]
//     [--concurrency 1,8,32] [--max-tokens 128] [--prompt-len 700] [--k 6] [--draft-k 3]
//     [--lookup-min 2] [--lookup-max 5] [--disable-by-batch-size 16] [--vocab 4096]
//     [--peer PATH | --peer none] [--peer-threads N] [--no-draft] [--repeat 2]
//     [--only "ortllm ngram,llama-server"] (setups by label or label prefix)
// bench/spec-step-cost.ts (the runner's verification step) and bench/draft-agreement.ts (the pair's
// teacher-forced agreement) give the figures docs/perf/speculative-decoding.md explains these with.
// Each point is the best of --repeat runs; the prompts repeat across runs, so part of the prefills
// come from the servers' prefix caches (both have one): decode tok/s leaves the prefill out.
//   ortllm's forward-pass thread count comes from VLLM_CPU_OMP_THREADS_BIND, as for the server.

import { existsSync, mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { loadTokenizer } from '../src/model/load-model';
import { BENCH_PAIR, ensureDraftPair } from './draft-pair';
import { fmt } from './serve-points';
import { freePort, startPolled, startServer, type RunningServer } from './processes';
import { threadsLine } from './runner-ceiling';
import { llamaSpecMetrics, loadPoint, vllmSpecMetrics, type LoadPoint, type MetricsReader } from './spec-load';
import { freeWorkloads, repeatedBigrams, passageCopyPrompts, storiesWorkloads, type SpecWorkload } from './spec-workloads';

const repoRoot = resolve(__dirname, '..', '..');
const cacheDir = join(repoRoot, '.bench-cache');
const storiesPath = resolve(repoRoot, '..', 'shared', 'models', 'stories260K.gguf');

interface Args {
  parts: string[];
  scale: number;
  scales: number[];
  concurrency: number[];
  maxTokens: number;
  promptLen: number;
  k: number;
  draftK: number;
  lookupMin: number;
  lookupMax: number;
  disableByBatchSize: number;
  vocab: number;
  peer: string | null;
  peerThreads: number;
  draft: boolean;
  repeat: number;
  /** Setups whose label contains one of these (all when empty). */
  only: string[];
}

function parseArgs(argv: string[]): Args {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const numbers = (flag: string, fallback: string) => (get(flag) ?? fallback).split(',').filter(Boolean).map(Number);
  const defaultPeer = join(cacheDir, 'llama.cpp', 'build', 'bin', 'llama-server');
  const peerFlag = get('--peer');
  const peer = peerFlag === 'none' ? null : peerFlag ? resolve(peerFlag) : existsSync(defaultPeer) ? defaultPeer : null;
  if (peer && !existsSync(peer)) throw new Error(`--peer: '${peer}' does not exist (bench/build-llama-server.sh builds one)`);
  return {
    parts: (get('--parts') ?? 'pair,scales,stories').split(','),
    scale: Number(get('--scale') ?? BENCH_PAIR.residualScale),
    scales: numbers('--scales', '0.05,0.2'),
    concurrency: numbers('--concurrency', '1,8,32'),
    maxTokens: Number(get('--max-tokens') ?? 128),
    promptLen: Number(get('--prompt-len') ?? 700),
    k: Number(get('--k') ?? 6),
    draftK: Number(get('--draft-k') ?? 3),
    lookupMin: Number(get('--lookup-min') ?? 2),
    lookupMax: Number(get('--lookup-max') ?? 5),
    disableByBatchSize: Number(get('--disable-by-batch-size') ?? 16),
    vocab: Number(get('--vocab') ?? BENCH_PAIR.vocabSize),
    peer,
    peerThreads: Number(get('--peer-threads') ?? availableParallelism()),
    draft: !argv.includes('--no-draft'),
    repeat: Number(get('--repeat') ?? 2),
    only: (get('--only') ?? '').split(',').filter(Boolean),
  };
}

/** One server setup to measure: which server, its extra flags, at which stream counts. */
interface Setup {
  label: string;
  server: 'ortllm' | 'llama-server';
  flags: string[];
  concurrency: number[];
  /** The no-speculation setup of the same server, the ratio's denominator. */
  baseline?: string;
  /** llama-server's setup of the same kind of speculation, ortllm's other denominator. */
  peer?: string;
}

interface Measured {
  setup: Setup;
  points: LoadPoint[];
}

const maxStreams = (args: Args) => Math.max(...args.concurrency);
const context = (args: Args) => Math.ceil((args.promptLen + args.maxTokens + 64) / 256) * 256;

async function start(setup: Setup, model: string, args: Args): Promise<RunningServer & { metrics: MetricsReader }> {
  if (setup.server === 'ortllm') {
    const argv = [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', model, '--port', '0', '--max-num-seqs', String(maxStreams(args)), '--max-model-len', String(context(args)), '--served-model-name', 'bench', '--disable-log-stats', ...setup.flags];
    return { ...(await startServer(process.execPath, argv, repoRoot, setup.label)), metrics: vllmSpecMetrics };
  }
  const port = await freePort();
  const slots = maxStreams(args);
  const argv = ['-m', model, '-t', String(args.peerThreads), '-np', String(slots), '-c', String(context(args) * slots), '--metrics', '--host', '127.0.0.1', '--port', String(port), '--no-webui', ...setup.flags];
  return { ...(await startPolled(args.peer!, argv, port, setup.label)), metrics: llamaSpecMetrics };
}

const requestsAt = (c: number) => (c === 1 ? 4 : c === 8 ? 16 : c);

async function measureSetup(setup: Setup, model: string, w: SpecWorkload, args: Args): Promise<Measured> {
  const server = await start(setup, model, args);
  try {
    await loadPoint(server.baseUrl, w.prompts.slice(-2), 8, 2, 2, null, w.sampling); // warm-up
    const points: LoadPoint[] = [];
    for (const c of setup.concurrency) {
      let best: LoadPoint | null = null;
      for (let r = 0; r < args.repeat; r++) {
        const p = await loadPoint(server.baseUrl, w.prompts, args.maxTokens, c, requestsAt(c), server.metrics, w.sampling);
        if (!best || p.tokS > best.tokS) best = p;
      }
      points.push(best!);
    }
    return { setup, points };
  } finally {
    await server.stop();
  }
}

function specFlag(config: Record<string, unknown>): string[] {
  return ['--speculative-config', JSON.stringify(config)];
}

function ngramSetups(args: Args, conc: number[]): Setup[] {
  const ngram = { method: 'ngram', num_speculative_tokens: args.k, prompt_lookup_min: args.lookupMin, prompt_lookup_max: args.lookupMax };
  const peer = `llama-server ngram-simple n=${args.lookupMin} m=${args.k}`;
  const setups: Setup[] = [
    { label: 'ortllm', server: 'ortllm', flags: [], concurrency: conc, peer: 'llama-server' },
    { label: `ortllm ngram k=${args.k}`, server: 'ortllm', flags: specFlag(ngram), concurrency: conc, baseline: 'ortllm', peer },
    { label: `ortllm ngram k=${args.k} dbs=${args.disableByBatchSize}`, server: 'ortllm', flags: specFlag({ ...ngram, disable_by_batch_size: args.disableByBatchSize }), concurrency: conc.filter((c) => c > 1), baseline: 'ortllm', peer },
  ];
  if (!args.peer) return setups;
  return [
    ...setups,
    { label: 'llama-server', server: 'llama-server', flags: [], concurrency: conc },
    {
      label: peer,
      server: 'llama-server',
      flags: ['--spec-type', 'ngram-simple', '--spec-ngram-simple-size-n', String(args.lookupMin), '--spec-ngram-simple-size-m', String(args.k)],
      concurrency: conc,
      baseline: 'llama-server',
    },
  ];
}

function draftSetups(args: Args, draft: string, conc: number[], withBaselines: boolean): Setup[] {
  const peer = `llama-server -md n-max=${args.draftK}`;
  const setups: Setup[] = [];
  if (withBaselines) setups.push({ label: 'ortllm', server: 'ortllm', flags: [], concurrency: conc, peer: 'llama-server' });
  setups.push({ label: `ortllm draft k=${args.draftK}`, server: 'ortllm', flags: specFlag({ method: 'draft_model', model: draft, num_speculative_tokens: args.draftK }), concurrency: conc, baseline: 'ortllm', peer });
  if (!args.peer) return setups;
  if (withBaselines) setups.push({ label: 'llama-server', server: 'llama-server', flags: [], concurrency: conc });
  setups.push({ label: peer, server: 'llama-server', flags: ['-md', draft, '--spec-type', 'draft-simple', '--spec-draft-n-max', String(args.draftK), '--spec-draft-n-min', '0'], concurrency: conc, baseline: 'llama-server' });
  return setups;
}

function printTable(title: string, results: Measured[]): void {
  console.log(`\n${title}`);
  console.log(`${'setup'.padEnd(40)} conc    tok/s  decode tok/s  TTFT ms  accept  mean len  x own plain  x llama plain  x llama same`);
  const find = (label: string | undefined, c: number) => results.find((r) => r.setup.label === label)?.points.find((p) => p.concurrency === c);
  for (const r of results) {
    for (const p of r.points) {
      const s = p.spec;
      const accept = s && s.draftTokens > 0 ? s.acceptedTokens / s.draftTokens : NaN;
      const meanLen = s && s.drafts > 0 ? 1 + s.acceptedTokens / s.drafts : NaN;
      const own = find(r.setup.baseline, p.concurrency);
      const llama = find('llama-server', p.concurrency);
      const same = find(r.setup.peer, p.concurrency);
      console.log(
        [
          r.setup.label.padEnd(40),
          String(p.concurrency).padStart(4),
          fmt(p.tokS).padStart(8),
          fmt(p.decodeTokS).padStart(13),
          fmt(p.ttftMs, 0).padStart(8),
          (Number.isFinite(accept) ? `${fmt(100 * accept, 0)}%` : '-').padStart(7),
          (Number.isFinite(meanLen) ? fmt(meanLen, 2) : '-').padStart(9),
          (own ? fmt(p.tokS / own.tokS, 2) : '').padStart(12),
          (llama ? fmt(p.tokS / llama.tokS, 2) : '').padStart(14),
          (same ? fmt(p.tokS / same.tokS, 2) : '').padStart(13),
        ].join(' '),
      );
    }
  }
}

async function runAll(title: string, model: string, w: SpecWorkload, setups: Setup[], args: Args): Promise<void> {
  const results: Measured[] = [];
  for (const setup of setups) {
    if (args.only.length > 0 && !args.only.some((o) => setup.label === o || setup.label.startsWith(`${o} `))) continue;
    try {
      results.push(await measureSetup(setup, model, w, args));
    } catch (err) {
      console.log(`  ${setup.label}: not measured (${(err as Error).message.split('\n').slice(0, 3).join(' ')})`);
    }
  }
  printTable(title, results);
}

function describe(w: SpecWorkload): string {
  const len = w.prompts.reduce((n, p) => n + p.length, 0) / w.prompts.length;
  const rep = w.prompts.reduce((n, p) => n + repeatedBigrams(p), 0) / w.prompts.length;
  const how = w.sampling ? `temperature ${w.sampling.temperature}, seeded` : 'greedy';
  return `${w.name} (${how}): ${w.prompts.length} distinct prompts of ~${Math.round(len)} tokens, ${fmt(100 * rep, 0)}% of each prompt's bigrams repeat an earlier one`;
}

async function pairWorkloads(target: string, args: Args): Promise<SpecWorkload[]> {
  const gen = await start({ label: 'ortllm (copy prompts)', server: 'ortllm', flags: [], concurrency: [] }, target, args);
  try {
    const file = join(cacheDir, `spec-passages-${basename(target, '.gguf')}-${args.promptLen}x${maxStreams(args)}.json`);
    return [await passageCopyPrompts(gen.baseUrl, maxStreams(args), args.promptLen, file), ...freeWorkloads(maxStreams(args))];
  } finally {
    await gen.stop();
  }
}

async function benchPair(args: Args): Promise<void> {
  const pair = await ensureDraftPair({ ...BENCH_PAIR, vocabSize: args.vocab, residualScale: args.scale }, cacheDir, storiesPath);
  console.log(`\n=== draft pair, residual scale ${args.scale}: target ${basename(pair.target)}, draft ${basename(pair.draft)}; max_tokens ${args.maxTokens}, ignore_eos`);
  for (const w of await pairWorkloads(pair.target, args)) {
    console.log(`  workload ${describe(w)}`);
    // Greedy drafts from a draft model are accepted with the target's probability of them: at temperature 1 that is no case for one.
    const withDraft = args.draft && !w.sampling;
    const setups = [...ngramSetups(args, args.concurrency), ...(withDraft ? draftSetups(args, pair.draft, args.concurrency, false) : [])];
    await runAll(`pair target (scale ${args.scale}), ${w.name}`, pair.target, w, setups, args);
  }
}

async function benchScales(args: Args): Promise<void> {
  for (const scale of args.scales) {
    const pair = await ensureDraftPair({ ...BENCH_PAIR, vocabSize: args.vocab, residualScale: scale }, cacheDir, storiesPath);
    const w = freeWorkloads(maxStreams(args))[0];
    console.log(`\n=== draft pair, residual scale ${scale}, free generation, 1 stream`);
    await runAll(`pair target (scale ${scale}), free`, pair.target, w, draftSetups(args, pair.draft, [1], true), args);
  }
}

async function benchStories(args: Args): Promise<void> {
  const { tokenizer } = await loadTokenizer(storiesPath);
  console.log('\n=== stories260K (trained, F32, tiny: these figures show per-step overhead, not memory bandwidth)');
  for (const w of storiesWorkloads(tokenizer, maxStreams(args), args.promptLen)) {
    console.log(`  workload ${describe(w)}`);
    await runAll(`stories260K, ${w.name}`, storiesPath, w, ngramSetups(args, args.concurrency), args);
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(storiesPath)) throw new Error(`missing ${storiesPath}: the benchmark needs ../shared/models`);
  mkdirSync(cacheDir, { recursive: true });
  console.log(`bench:spec: parts ${args.parts.join(',')}, concurrency ${args.concurrency.join(',')}, k ${args.k} (ngram ${args.lookupMin}..${args.lookupMax}), draft k ${args.draftK}, peer ${args.peer ?? 'none'} (${args.peerThreads} threads)`);
  console.log(threadsLine(args.peer ? args.peerThreads : null));
  if (args.parts.includes('pair')) await benchPair(args);
  if (args.parts.includes('scales') && args.draft) await benchScales(args);
  if (args.parts.includes('stories')) await benchStories(args);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
