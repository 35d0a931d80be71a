// `npm run bench:forward`: decode throughput of the model runner alone (no engine, no HTTP).
// For each model, context length and batch size, every sequence sits at `context` tokens of past
// and the runner decodes one token per sequence per step. Also times one prefill of `context`
// tokens. The KV contents do not change the cost, so the cache is not prefilled, but every row is
// written once first (runner-ceiling.ts touchKvCache): untouched pages all map to the OS's one
// zero page, and a decode over them reads nothing from memory.
//
// Options: --models stories260K,100M[,100M-q8_0,100m-gguf,1b-gguf,f32-h64]  --contexts 128,512  --batches 1,8,32,64  --seconds 2
//          (f32-h<hidden>: choose-backend.ts's native-f32 size-policy models, random float32 llama of that hidden size)
//          --threads N (intra-op and attention-kernel threads; default every core)
//          --attention native|graph (default: native when the addon is built)  --kv-cache-dtype float16|bfloat16|fp8|fp8_e4m3|fp8_e5m2
//          --native-q8-gemm off (Q8_0 linears in MatMulNBits even where the addon's AVX512-VNNI or AVX2 GEMM runs; runner/backends/native-q8.ts)
//          --small-decoder off (a small float32 model in onnxruntime segments, not the addon's; runner/backends/native-f32.ts)
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadModel } from '../src/model/load-model';
import { createRunner, resolveKvCacheDtype } from '../src/model/runner';
import type { KvCacheDtypeFlag } from '../src/model/runner/kv-dtype';
import { LoadedModel, ModelRunner } from '../src/model/types';
import { llamaConfig, quantizedQ8, randomModel } from './random-llama';
import { BENCH_100M_CONFIG, ensureBenchModel } from './random-model';
import { touchKvCache } from './runner-ceiling';

interface Args {
  models: string[];
  contexts: number[];
  batches: number[];
  seconds: number;
  threads?: number;
  attention?: 'native' | 'graph';
  kvCacheDtype?: KvCacheDtypeFlag;
  nativeQ8Gemm: boolean;
  smallDecoder: boolean;
}

const BLOCK_SIZE = 16;

function parseArgs(argv: string[]): Args {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const list = (flag: string, dflt: string) => (get(flag) ?? dflt).split(',').filter(Boolean);
  const threads = get('--threads');
  return {
    models: list('--models', 'stories260K,100M'),
    contexts: list('--contexts', '128,512').map(Number),
    batches: list('--batches', '1,8,32,64').map(Number),
    seconds: Number(get('--seconds') ?? 2),
    threads: threads ? Number(threads) : undefined,
    attention: get('--attention') as Args['attention'],
    kvCacheDtype: get('--kv-cache-dtype') as Args['kvCacheDtype'],
    nativeQ8Gemm: get('--native-q8-gemm') !== 'off',
    smallDecoder: get('--small-decoder') !== 'off',
  };
}

async function loadBenchModel(name: string): Promise<LoadedModel> {
  if (name === '100M') {
    return randomModel(BENCH_100M_CONFIG);
  }
  if (name === 'stories260K') {
    const path = resolve(__dirname, '../../../shared/models/stories260K.gguf');
    if (existsSync(path)) return loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
    console.warn(`(${path} is missing: timing stories260K's shape with random weights; speed does not depend on the values)`);
    return randomModel(llamaConfig({ hiddenSize: 64, intermediateSize: 172, numLayers: 5, numHeads: 8, numKvHeads: 4, vocabSize: 512 }));
  }
  const f32 = /^f32-h(\d+)$/.exec(name);
  if (f32) {
    // native-f32's size policy models (choose-backend.ts): llama-shaped, 5 layers, head size 32, intermediate 8/3 x hidden, vocab 2048.
    const hiddenSize = Number(f32[1]);
    const numHeads = Math.max(1, hiddenSize / 32);
    return randomModel(llamaConfig({ hiddenSize, intermediateSize: Math.round((hiddenSize * 8) / 3), numLayers: 5, numHeads, numKvHeads: Math.max(1, numHeads / 2), headDim: 32, vocabSize: 2048 }));
  }
  if (name === '100M-q8_0') return quantizedQ8(await loadBenchModel('100M'));
  if (name === '100m-gguf' || name === '1b-gguf') {
    const root = resolve(__dirname, '../..');
    const path = await ensureBenchModel(name === '1b-gguf' ? '1b' : '100m', resolve(root, '.bench-cache'), resolve(root, '../shared/models/stories260K.gguf'));
    return loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
  }
  throw new Error(`unknown bench model '${name}' (stories260K, 100M, 100M-q8_0, 100m-gguf, 1b-gguf: the Q8_0 files npm run bench serves, f32-h<hidden>)`);
}

/** Runs `fn` until `seconds` have passed (at least `minRuns` times); returns runs per second. */
/** Runs per second of wall time, and the process's CPU ms per run (every thread: steadier than wall time on a loaded machine). */
async function rate(fn: () => Promise<unknown>, seconds: number, minRuns = 3): Promise<{ perSec: number; cpuMs: number }> {
  await fn(); // warm-up
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  let runs = 0;
  while (runs < minRuns || performance.now() - start < seconds * 1000) {
    await fn();
    runs++;
  }
  const cpu = process.cpuUsage(cpu0);
  return { perSec: runs / ((performance.now() - start) / 1000), cpuMs: (cpu.user + cpu.system) / 1000 / runs };
}

async function benchModel(name: string, args: Args): Promise<string[]> {
  const model = await loadBenchModel(name);
  const maxBatch = Math.max(...args.batches);
  const maxContext = Math.max(...args.contexts);
  const blocksPerSeq = Math.ceil((maxContext + 64) / BLOCK_SIZE);
  const t0 = performance.now();
  const runner: ModelRunner = await createRunner(model, {
    blockSize: BLOCK_SIZE,
    numBlocks: maxBatch * blocksPerSeq,
    device: 'cpu',
    intraOpThreads: args.threads,
    ...(args.attention ? { attention: args.attention } : {}),
    ...(args.kvCacheDtype ? { kvCacheDtype: resolveKvCacheDtype(model, args.kvCacheDtype) } : {}),
    nativeQ8Gemm: args.nativeQ8Gemm,
    smallDecoder: args.smallDecoder,
  });
  touchKvCache(runner);
  const rows = [`${name}: runner created in ${((performance.now() - t0) / 1000).toFixed(1)} s`];
  const table = (seq: number) => Array.from({ length: blocksPerSeq }, (_, i) => seq * blocksPerSeq + i);
  try {
    for (const context of args.contexts) {
      const prompt = Array.from({ length: context }, (_, i) => (i * 31 + 1) % model.config.vocabSize);
      const prefill = await rate(() => runner.step([{ tokens: prompt, positionOffset: 0, blockTable: table(0) }]), args.seconds, 1);
      rows.push(row(name, context, 'prefill', prefill, context));
      for (const batch of args.batches) {
        const seqs = Array.from({ length: batch }, (_, s) => ({ tokens: [s + 2], positionOffset: context, blockTable: table(s) }));
        const steps = await rate(() => runner.step(seqs), args.seconds);
        rows.push(row(name, context, String(batch), steps, batch));
      }
    }
  } finally {
    await runner.dispose();
  }
  return rows;
}

function row(model: string, context: number, batch: string, r: { perSec: number; cpuMs: number }, tokensPerStep: number): string {
  return [model.padEnd(12), String(context).padStart(7), batch.padStart(8), r.perSec.toFixed(2).padStart(10), (r.perSec * tokensPerStep).toFixed(1).padStart(10), r.cpuMs.toFixed(2).padStart(12)].join(' ');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  console.log(
    `forward bench: block size ${BLOCK_SIZE}, ${args.seconds} s per point, threads ${args.threads ?? 'ORT default'}, attention ${args.attention ?? 'auto'}, KV ${args.kvCacheDtype ?? 'float32'}`,
  );
  console.log(['model'.padEnd(12), 'context'.padStart(7), 'batch'.padStart(8), 'steps/s'.padStart(10), 'tokens/s'.padStart(10), 'cpu ms/step'.padStart(12)].join(' '));
  for (const name of args.models) {
    for (const line of await benchModel(name, args)) console.log(line);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
