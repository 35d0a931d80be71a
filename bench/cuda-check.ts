// `node dist/bench/cuda-check.js MODEL [--tokens 64] [--batch 1,8] [--attention native|graph] [--dtype float32|float16] [--tf32]`:
// the check to run on a GPU host (docs/cuda.md). Greedy-decodes the same prompts on a CPU runner
// and on a CUDA runner, prints prefill and decode tokens/s of each, and exits 1 unless every
// sequence's greedy tokens are equal on both devices (2 when CUDA cannot be used at all).
// MODEL is a GGUF file or Hugging Face directory, or `random:100m`, `random:1b` (the benchmark
// shapes with seeded float32 weights, built in memory: nothing to copy to the GPU host) and
// `random:100m-q8_0`, `random:1b-q8_0` (the same, Q8_0 as the bench's GGUF files).
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import { keepCudaFloat32Exact } from '../src/model/runner/cuda-numerics';
import type { LoadedModel, ModelRunner } from '../src/model/types';
import { quantizedQ8, randomModel } from './random-llama';
import { BENCH_SHAPES, type BenchShape } from './random-model';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const argmax = (a: Float32Array, at: number, n: number) => {
  let best = at;
  for (let i = at; i < at + n; i++) if (a[i] > a[best]) best = i;
  return best - at;
};

/** A model file, or one of the benchmark's random shapes built in memory (`random:100m[-q8_0]`). */
async function modelFor(spec: string): Promise<LoadedModel> {
  const random = /^random:(100m|1b)(-q8_0)?$/i.exec(spec);
  if (!random) return loadModel({ model: spec, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' });
  const model = randomModel(BENCH_SHAPES[random[1].toLowerCase() as BenchShape]);
  return random[2] ? quantizedQ8(model) : model;
}

/** Greedy tokens of `batch` prompts decoded together; prefill and decode tokens/s. */
async function greedy(runner: ModelRunner, batch: number, tokens: number): Promise<{ out: number[][]; tokS: number; prefillTokS: number }> {
  const vocab = runner.config.vocabSize;
  const prompts = Array.from({ length: batch }, (_, s) => Array.from({ length: 16 + s }, (_, i) => 1 + ((s * 131 + i * 31) % Math.min(vocab - 1, 500))));
  const perSeq = Math.ceil((16 + batch + tokens + 1) / runner.blockSize);
  const tables = prompts.map((_, s) => Array.from({ length: perSeq }, (_, b) => s * perSeq + b));
  const out = prompts.map(() => [] as number[]);
  const prefillStart = performance.now();
  let r = await runner.step(prompts.map((p, s) => ({ tokens: p, positionOffset: 0, blockTable: tables[s] })));
  const prefillTokS = prompts.reduce((n, p) => n + p.length, 0) / ((performance.now() - prefillStart) / 1000);
  const start = performance.now();
  for (let t = 0; t < tokens; t++) {
    prompts.forEach((_, s) => out[s].push(argmax(r.logits, s * vocab, vocab)));
    if (t === tokens - 1) break;
    r = await runner.step(prompts.map((p, s) => ({ tokens: [out[s][t]], positionOffset: p.length + t, blockTable: tables[s] })));
  }
  return { out, tokS: (batch * (tokens - 1)) / ((performance.now() - start) / 1000), prefillTokS };
}

async function main(): Promise<void> {
  const path = process.argv[2];
  if (!path || path.startsWith('--')) throw new Error('usage: cuda-check MODEL.gguf|HF_DIR [--tokens 64] [--batch 1,8] [--attention native|graph]');
  const tokens = Number(arg('tokens', '64'));
  const batches = arg('batch', '1,8').split(',').map(Number);
  const attention = process.argv.includes('--attention') ? (arg('attention', '') as 'native' | 'graph') : undefined;
  const dtype = arg('dtype', 'auto') as 'auto' | 'float32' | 'float16';
  // As the server does with --device cuda; --tf32 measures onnxruntime's own default.
  if (!process.argv.includes('--tf32')) keepCudaFloat32Exact();
  const model = await modelFor(path);
  const maxBatch = Math.max(...batches);
  const numBlocks = maxBatch * Math.ceil((16 + maxBatch + tokens + 1) / 16) + 1;
  const make = (device: 'cpu' | 'cuda') => createRunner(model, { blockSize: 16, numBlocks, device, dtype, ...(attention ? { attention } : {}) });
  const cpu = await make('cpu');
  let cuda: ModelRunner;
  try {
    cuda = await make('cuda');
  } catch (err) {
    console.error(`CUDA runner could not be created: ${err instanceof Error ? err.message : String(err)}`);
    await cpu.dispose();
    process.exit(2);
  }
  // First runs load kernels (CUDA's lazy module loading, cuDNN/cuBLAS handles) and size arenas.
  await greedy(cpu, 1, 4);
  await greedy(cuda, 1, 4);
  let same = true;
  for (const batch of batches) {
    const a = await greedy(cpu, batch, tokens);
    const b = await greedy(cuda, batch, tokens);
    const mismatched = a.out.map((seq, s) => seq.findIndex((t, i) => t !== b.out[s][i])).filter((i) => i >= 0);
    same &&= mismatched.length === 0;
    console.log(
      `batch ${batch}: decode cpu ${a.tokS.toFixed(1)} tok/s, cuda ${b.tokS.toFixed(1)} tok/s; prefill cpu ${a.prefillTokS.toFixed(0)} tok/s, cuda ${b.prefillTokS.toFixed(0)} tok/s; greedy tokens ${mismatched.length === 0 ? 'equal' : `DIFFER in ${mismatched.length} of ${batch} sequences (first at token ${Math.min(...mismatched)})`}`,
    );
  }
  await cpu.dispose();
  await cuda.dispose();
  process.exit(same ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
