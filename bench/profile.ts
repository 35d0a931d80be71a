// `node dist/bench/profile.js`: where a runner step's time goes, per ONNX op type, from
// onnxruntime's own profiler. Times one prefill of --prefill tokens and --steps decode steps of
// --batch sequences at --context tokens of past, and prints each phase's op-type totals.
//
// Options: --model stories260K|100m|1b|PATH.gguf  --prefill 700  --batch 32  --context 1024
//          --steps 4  --threads N (default: the engine's default)  --dtype float32|float16
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultIntraOpThreads } from '../src/engine/core/core-host';
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import { profileSessionsInto } from '../src/model/runner/session';
import { ensureBenchModel, type BenchShape, BENCH_SHAPES } from './random-model';

const root = resolve(__dirname, '..', '..');
const stories = join(root, '..', 'shared', 'models', 'stories260K.gguf');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

interface ProfileEvent {
  cat: string;
  name: string;
  ts: number;
  dur: number;
  args?: { op_name?: string };
}

/** Op-type totals (ms) of the model runs whose index is in `runs`. */
function summarize(events: ProfileEvent[], runs: Set<number>): { total: number; byOp: Map<string, number> } {
  const windows = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  const chosen = windows.filter((_, i) => runs.has(i));
  const byOp = new Map<string, number>();
  let total = 0;
  for (const w of chosen) total += w.dur / 1000;
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    if (!chosen.some((w) => e.ts >= w.ts && e.ts <= w.ts + w.dur)) continue;
    const op = e.args?.op_name ?? '?';
    byOp.set(op, (byOp.get(op) ?? 0) + e.dur / 1000);
  }
  return { total, byOp };
}

function print(title: string, runs: number, s: { total: number; byOp: Map<string, number> }): void {
  console.log(`\n${title}: ${(s.total / runs).toFixed(1)} ms per run (${runs} runs)`);
  const rows = [...s.byOp.entries()].sort((a, b) => b[1] - a[1]);
  const kernels = rows.reduce((n, [, ms]) => n + ms, 0);
  for (const [op, ms] of rows.slice(0, 14)) {
    console.log(`  ${op.padEnd(34)} ${(ms / runs).toFixed(2).padStart(9)} ms  ${((100 * ms) / s.total).toFixed(1).padStart(5)}%`);
  }
  console.log(`  ${'(outside kernels)'.padEnd(34)} ${((s.total - kernels) / runs).toFixed(2).padStart(9)} ms`);
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
  const dir = join(root, '.bench-cache');
  const file = join(dir, readdirSync(dir).find((f) => f.startsWith(`profile-${process.pid}`))!);
  const events = JSON.parse(readFileSync(file, 'utf8')) as ProfileEvent[];
  rmSync(file, { force: true });
  print(`prefill ${prefill}`, 1, summarize(events, new Set([1])));
  const decodeRuns = new Set(Array.from({ length: steps }, (_, i) => 3 + i));
  print(`decode batch ${batch} @ ${context}`, steps, summarize(events, decodeRuns));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
