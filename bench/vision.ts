// `npm run bench:vision`: images in, text out, ortllm against llama.cpp's llama-server (--mmproj)
// on the same GGUF pair (bench/vision-models.ts: seeded towers at their published widths; F32
// mmproj, so both compute from the same values, or --mmproj-type f16 as the converters write). Per family:
//   (a) encoder time per image: ortllm's ImageEncoder.encode timed in this process (the call the
//       engine's step makes), and over HTTP as TTFT(image) - TTFT(text of the same prompt length);
//       llama-server's as the same TTFT difference (this version encodes in mtmd batches and logs no
//       encode time; its "prompt eval time" of the image request, encoder + prefill, is printed too);
//   (b) TTFT of one image + ~100 text tokens, streamed, to the first content chunk;
//   (c) 8 image requests at once (other images each), max_tokens 32, ignore_eos: requests/s, tokens/s.
// Servers run one at a time. Every image is new to the server (no encoder or prompt cache hit).
//
//   npm run bench:vision -- [--families gemma3,llava,qwen2.5vl] [--layers N] [--mmproj-type f16|f32]
//     [--threads N] [--peer-threads N] [--peer-args "-fa off" (the default)] [--repeats 3] [--concurrency 8] [--max-tokens 32] [--peer PATH | --peer none]
// --layers runs N tower layers at full width (default: 1 for gemma3, 4 for llava and qwen2.5vl, so that a run
// fits a shared 2-core machine); the figures per layer scale to the full tower (towerFlops).
import { existsSync, mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { loadModel } from '../src/model/load-model';
import { preprocessImage } from '../src/model/vision/preprocess-image';
import { loadOptions } from '../test/helpers/model-files';
import { randomImage } from '../test/unit/model/vision/random-image';
import { defaultPeer } from './llama-parity';
import { freePort, startPolled, startServer, type RunningServer } from './processes';
import { ensureVisionModel, mmprojBeside, TOWERS, towerFlops, type BenchFamily, type MmprojType } from './vision-models';
import { chatUsage, idsCompletion, imageBurst, imageChat, imageDataUrl, textIds, timeToFirstContent, type Burst, type Target } from './vision-requests';

const repoRoot = resolve(__dirname, '..', '..');
const cacheDir = join(repoRoot, '.bench-cache');
const DEFAULT_LAYERS: Record<BenchFamily, number> = { gemma3: 1, llava: 4, 'qwen2.5vl': 4 };

interface Args {
  families: BenchFamily[];
  layers: number | null;
  mmprojType: MmprojType;
  threads: number;
  peerThreads: number;
  /** More llama-server flags (e.g. "-fa off"). */
  peerArgs: string[];
  repeats: number;
  concurrency: number;
  maxTokens: number;
  peer: string | null;
}

function parseArgs(argv: string[]): Args {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const families = (get('--families') ?? 'gemma3,llava,qwen2.5vl').split(',').filter(Boolean);
  for (const f of families) if (!(f in TOWERS)) throw new Error(`unknown family '${f}' (${Object.keys(TOWERS).join(', ')})`);
  const mmprojType = get('--mmproj-type') ?? 'f32';
  if (mmprojType !== 'f16' && mmprojType !== 'f32') throw new Error('--mmproj-type must be f16 or f32');
  const peerFlag = get('--peer');
  const peer = peerFlag === 'none' ? null : resolve(peerFlag ?? defaultPeer(repoRoot));
  if (peer && !existsSync(peer)) throw new Error(`--peer: '${peer}' does not exist (bench/build-llama-server.sh builds one; --peer none skips it)`);
  return {
    families: families as BenchFamily[],
    layers: get('--layers') ? Number(get('--layers')) : null,
    mmprojType,
    threads: Number(get('--threads') ?? availableParallelism()),
    peerThreads: Number(get('--peer-threads') ?? get('--threads') ?? availableParallelism()),
    // Flash attention off: llama.cpp's CPU flash attention over the tower's 4096 patches is ~2x slower (docs/perf/vision.md).
    peerArgs: (get('--peer-args') ?? '-fa off').split(' ').filter(Boolean),
    repeats: Number(get('--repeats') ?? 3),
    concurrency: Number(get('--concurrency') ?? 8),
    maxTokens: Number(get('--max-tokens') ?? 32),
    peer,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const best = (xs: number[]) => Math.min(...xs);

/** ortllm's encoder alone: ImageEncoder.encode of a preprocessed image, best and median of `repeats` after one warm-up. */
async function encodeInProcess(model: string, family: BenchFamily, args: Args): Promise<number[]> {
  const loaded = await loadModel(loadOptions(model));
  const vision = loaded.vision!;
  const encoder = await vision.createEncoder({ intraOpThreads: args.threads });
  const side = TOWERS[family].imageSize;
  const times: number[] = [];
  try {
    for (let i = 0; i <= args.repeats; i++) {
      const image = preprocessImage(vision.processor, randomImage(side, side, 900 + i));
      const start = performance.now();
      encoder.encode(image);
      if (i > 0) times.push(performance.now() - start);
    }
  } finally {
    await encoder.release();
  }
  return times;
}

interface ServerFigures {
  label: string;
  promptTokens: number;
  ttftImage: number[];
  ttftText: number[];
  /** Prompt time of each image request from the server's log (llama-server: encoder + prefill), else empty. */
  loggedPrompt: number[];
  burst: Burst;
}

/** Seeds of the images: every phase and repeat its own, so that no image is encoded twice by one server. */
let nextSeed = 1;

async function measureServer(label: string, target: Target, family: BenchFamily, args: Args, logged: number[]): Promise<ServerFigures> {
  const side = TOWERS[family].imageSize;
  const url = () => imageDataUrl(side, nextSeed++);
  const usage = await chatUsage(target, imageChat(await url(), 4, false)); // warm-up, and the prompt length
  const textOnly = () => timeToFirstContent(target, target.idsPath, idsCompletion(target, textIds(usage.prompt_tokens, nextSeed++), 4));
  await textOnly();
  const ttftImage: number[] = [];
  const ttftText: number[] = [];
  const loggedPrompt: number[] = [];
  // The server prints a request's timings as its slot is released, just after the last chunk.
  const settle = () => new Promise((r) => setTimeout(r, 200));
  for (let i = 0; i < args.repeats; i++) {
    await settle();
    logged.length = 0;
    ttftImage.push(await timeToFirstContent(target, '/v1/chat/completions', imageChat(await url(), 4, true)));
    await settle();
    loggedPrompt.push(...logged);
    ttftText.push(await textOnly());
  }
  const urls = await Promise.all(Array.from({ length: args.concurrency }, url));
  const burst = await imageBurst(target, urls, args.maxTokens);
  return { label, promptTokens: usage.prompt_tokens, ttftImage, ttftText, loggedPrompt, burst };
}

async function withServer<T>(server: RunningServer, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    await server.stop();
  }
}

async function runOrtllm(model: string, family: BenchFamily, args: Args): Promise<ServerFigures> {
  const env = { ...process.env, VLLM_CPU_OMP_THREADS_BIND: `0-${args.threads - 1}` };
  const flags = ['--port', '0', '--max-num-seqs', String(args.concurrency), '--max-model-len', '2048', '--served-model-name', 'bench', '--disable-log-stats'];
  const server = await startServer(process.execPath, [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', model, ...flags], repoRoot, 'ortllm', 600_000, env);
  return withServer(server, () => measureServer(`ortllm (${args.threads} threads)`, { baseUrl: server.baseUrl, extra: {}, idsPath: '/v1/completions' as const }, family, args, []));
}

async function runPeer(peer: string, model: string, family: BenchFamily, args: Args): Promise<ServerFigures> {
  const port = await freePort();
  const logged: number[] = [];
  const onOutput = (text: string) => {
    // This llama-server encodes images in mtmd batches, which print no encode time of their own.
    for (const m of text.matchAll(/prompt eval time =\s*([\d.]+) ms/g)) logged.push(Number(m[1]));
  };
  const flags = ['-m', model, '--mmproj', mmprojBeside(model), '-t', String(args.peerThreads), '-np', String(args.concurrency), ...args.peerArgs];
  const server = await startPolled(peer, [...flags, '-c', String(2048 * args.concurrency), '--host', '127.0.0.1', '--port', String(port), '--no-webui'], port, 'llama-server', '/health', 600_000, onOutput);
  const target = { baseUrl: server.baseUrl, extra: { cache_prompt: false }, idsPath: '/completion' as const };
  return withServer(server, () => measureServer(`llama-server (-t ${args.peerThreads}, -np ${args.concurrency}${args.peerArgs.length ? ` ${args.peerArgs.join(' ')}` : ''})`, target, family, args, logged));
}

const ms = (x: number) => x.toFixed(0).padStart(7);

function report(family: BenchFamily, layers: number, encode: number[], servers: ServerFigures[], args: Args): void {
  const gflop = towerFlops(family, layers) / 1e9;
  const fullGflop = towerFlops(family, TOWERS[family].fullLayers) / 1e9;
  console.log(`\n=== ${family}: ${layers} of ${TOWERS[family].fullLayers} tower layers at full width, ${args.mmprojType.toUpperCase()} mmproj, ${args.repeats} repeats (best / median ms)`);
  console.log(`tower + projector: ${gflop.toFixed(1)} GFLOP per image here, ${fullGflop.toFixed(0)} GFLOP at full depth`);
  const encodeBest = best(encode);
  console.log(`ortllm encode() in process: ${ms(encodeBest)} / ${ms(median(encode))}   ${(gflop / (encodeBest / 1000)).toFixed(1)} GFLOP/s`);
  for (const s of servers) {
    const estimate = median(s.ttftImage) - median(s.ttftText);
    console.log(`\n${s.label}: prompt ${s.promptTokens} tokens with the image`);
    console.log(`  TTFT image + text        ${ms(best(s.ttftImage))} / ${ms(median(s.ttftImage))}`);
    console.log(`  TTFT text, same length   ${ms(best(s.ttftText))} / ${ms(median(s.ttftText))}`);
    console.log(`  encoder, TTFT difference ${ms(estimate)}`);
    if (s.loggedPrompt.length) console.log(`  prompt time, server log  ${ms(best(s.loggedPrompt))} / ${ms(median(s.loggedPrompt))}   (encoder + prefill)`);
    const b = s.burst;
    console.log(`  ${b.requests} at once, max_tokens ${args.maxTokens}: ${b.seconds.toFixed(2)} s, ${(b.requests / b.seconds).toFixed(3)} req/s, ${(b.completionTokens / b.seconds).toFixed(1)} tok/s`);
  }
  if (servers.length === 2) {
    const [ours, peer] = servers;
    console.log('\nortllm / llama-server:');
    const peerEncode = median(peer.ttftImage) - median(peer.ttftText);
    console.log(`  encoder (TTFT differences)         ${((median(ours.ttftImage) - median(ours.ttftText)) / peerEncode).toFixed(2)}`);
    console.log(`  TTFT image + text (median)         ${(median(ours.ttftImage) / median(peer.ttftImage)).toFixed(2)}`);
    console.log(`  requests/s at ${args.concurrency}                  ${(ours.burst.seconds > 0 ? peer.burst.seconds / ours.burst.seconds : NaN).toFixed(2)}`);
  }
}

async function benchFamily(family: BenchFamily, args: Args): Promise<void> {
  const layers = args.layers ?? DEFAULT_LAYERS[family];
  const model = await ensureVisionModel(family, layers, args.mmprojType, cacheDir);
  const encode = await encodeInProcess(model, family, args);
  const servers = [await runOrtllm(model, family, args)];
  if (args.peer) servers.push(await runPeer(args.peer, model, family, args));
  report(family, layers, encode, servers, args);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  mkdirSync(cacheDir, { recursive: true });
  console.log(`bench:vision: ${args.families.join(',')}, ortllm ${args.threads} threads, peer ${args.peer ?? 'none'} (${args.peerThreads} threads)`);
  for (const family of args.families) await benchFamily(family, args);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
