// `node dist/bench/profile.js`: where a runner step's time goes, per ONNX op type, from
// onnxruntime's own profiler. Times one prefill of --prefill tokens and --steps decode steps of
// --batch sequences at --context tokens of past, and prints each phase's op-type totals.
//
// Options: --model stories260K|100m|1b|PATH.gguf  --prefill 700  --batch 32  --context 1024
//          --steps 4  --threads N (default: the engine's default)  --dtype float32|float16
import { join, resolve } from 'node:path';
import { defaultIntraOpThreads } from '../src/engine/core/core-host';
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import { profileSessionsInto } from '../src/model/runner/session';
import { print, summarize, takeProfile } from './ort-profile';
import { ensureBenchModel, type BenchShape, BENCH_SHAPES } from './random-model';

const root = resolve(__dirname, '..', '..');
const stories = join(root, '..', 'shared', 'models', 'stories260K.gguf');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

async function main(): Promise<void> {
  const name = arg('model', '100m');
  const prefill = Number(arg('prefill', '700'));
  const batch = Number(arg('batch', '32'));
  const context = Number(arg('context', '1024'));
  const steps = Number(arg('steps', '4'));
  const threads = Number(arg('threads', String(defaultIntraOpThreads())));
  const dtype = arg('dtype', 'float32') as 'float32' | 'float16';
  const path =
    name === 'stories260K' ? stories : name in BENCH_SHAPES ? await ensureBenchModel(name as BenchShape, join(root, '.bench-cache'), stories) : name;
  const model = await loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' });
  const prefix = join(root, '.bench-cache', `profile-${process.pid}`);
  const sessions = profileSessionsInto(prefix);
  const blockSize = 16;
  const perSeq = Math.ceil((Math.max(context, prefill) + steps + 1) / blockSize);
  const runner = await createRunner(model, { blockSize, numBlocks: (batch + 1) * perSeq, device: 'cpu', intraOpThreads: threads, dtype });
  const table = (s: number) => Array.from({ length: perSeq }, (_, i) => s * perSeq + i);
  const prompt = Array.from({ length: prefill }, (_, i) => 1 + ((i * 31) % 500));
  console.log(`${name}: threads ${threads}, dtype ${dtype}, prefill ${prefill}, decode batch ${batch} at context ${context}`);

  await runner.step([{ tokens: prompt.slice(0, 8), positionOffset: 0, blockTable: table(batch) }]); // run 0: warm-up
  const t0 = performance.now();
  await runner.step([{ tokens: prompt, positionOffset: 0, blockTable: table(batch) }]); // run 1
  const prefillMs = performance.now() - t0;
  const seqs = (i: number) => Array.from({ length: batch }, (_, s) => ({ tokens: [2 + s], positionOffset: context + i, blockTable: table(s) }));
  await runner.step(seqs(0)); // warm-up at this shape
  const t1 = performance.now();
  for (let i = 1; i <= steps; i++) await runner.step(seqs(i));
  const decodeMs = (performance.now() - t1) / steps;
  console.log(`wall: prefill ${prefillMs.toFixed(0)} ms (${((prefill / prefillMs) * 1000).toFixed(0)} tok/s), decode ${decodeMs.toFixed(1)} ms/step (${((batch / decodeMs) * 1000).toFixed(0)} tok/s)`);
  sessions[0].endProfiling(); // writes <prefix>_<date>.json (the binding does not return the name)
  await runner.dispose();
  const events = takeProfile(join(root, '.bench-cache'), `profile-${process.pid}`);
  print(`prefill ${prefill}`, 1, summarize(events, new Set([1])));
  const decodeRuns = new Set(Array.from({ length: steps }, (_, i) => 3 + i));
  print(`decode batch ${batch} @ ${context}`, steps, summarize(events, decodeRuns));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
