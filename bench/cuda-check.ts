// `node dist/bench/cuda-check.js MODEL [--tokens 64] [--batch 1,8] [--attention native|graph]`:
// the check to run on a GPU host (docs/cuda.md). Greedy-decodes the same prompts on a CPU runner
// and on a CUDA runner, prints decode tokens/s of each, and exits 1 unless every sequence's
// greedy tokens are equal on both devices (2 when CUDA cannot be used at all).
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import type { ModelRunner } from '../src/model/types';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const argmax = (a: Float32Array, at: number, n: number) => {
  let best = at;
  for (let i = at; i < at + n; i++) if (a[i] > a[best]) best = i;
  return best - at;
};

/** Greedy tokens of `batch` prompts decoded together, and decode tokens/s (prefill excluded). */
async function greedy(runner: ModelRunner, batch: number, tokens: number): Promise<{ out: number[][]; tokS: number }> {
  const vocab = runner.config.vocabSize;
  const prompts = Array.from({ length: batch }, (_, s) => Array.from({ length: 16 + s }, (_, i) => 1 + ((s * 131 + i * 31) % Math.min(vocab - 1, 500))));
  const perSeq = Math.ceil((16 + batch + tokens + 1) / runner.blockSize);
  const tables = prompts.map((_, s) => Array.from({ length: perSeq }, (_, b) => s * perSeq + b));
  const out = prompts.map(() => [] as number[]);
  let r = await runner.step(prompts.map((p, s) => ({ tokens: p, positionOffset: 0, blockTable: tables[s] })));
  const start = performance.now();
  for (let t = 0; t < tokens; t++) {
    prompts.forEach((_, s) => out[s].push(argmax(r.logits, s * vocab, vocab)));
    if (t === tokens - 1) break;
    r = await runner.step(prompts.map((p, s) => ({ tokens: [out[s][t]], positionOffset: p.length + t, blockTable: tables[s] })));
  }
  return { out, tokS: (batch * (tokens - 1)) / ((performance.now() - start) / 1000) };
}

async function main(): Promise<void> {
  const path = process.argv[2];
  if (!path || path.startsWith('--')) throw new Error('usage: cuda-check MODEL.gguf|HF_DIR [--tokens 64] [--batch 1,8] [--attention native|graph]');
  const tokens = Number(arg('tokens', '64'));
  const batches = arg('batch', '1,8').split(',').map(Number);
  const attention = process.argv.includes('--attention') ? (arg('attention', '') as 'native' | 'graph') : undefined;
  const model = await loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' });
  const maxBatch = Math.max(...batches);
  const numBlocks = maxBatch * Math.ceil((16 + maxBatch + tokens + 1) / 16) + 1;
  const make = (device: 'cpu' | 'cuda') => createRunner(model, { blockSize: 16, numBlocks, device, ...(attention ? { attention } : {}) });
  const cpu = await make('cpu');
  let cuda: ModelRunner;
  try {
    cuda = await make('cuda');
  } catch (err) {
    console.error(`CUDA runner could not be created: ${err instanceof Error ? err.message : String(err)}`);
    await cpu.dispose();
    process.exit(2);
  }
  let same = true;
  for (const batch of batches) {
    const a = await greedy(cpu, batch, tokens);
    const b = await greedy(cuda, batch, tokens);
    const mismatched = a.out.map((seq, s) => seq.findIndex((t, i) => t !== b.out[s][i])).filter((i) => i >= 0);
    same &&= mismatched.length === 0;
    console.log(
      `batch ${batch}: cpu ${a.tokS.toFixed(1)} tok/s, cuda ${b.tokS.toFixed(1)} tok/s, greedy tokens ${mismatched.length === 0 ? 'equal' : `DIFFER in ${mismatched.length} of ${batch} sequences (first at token ${Math.min(...mismatched)})`}`,
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
