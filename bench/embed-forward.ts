// `node dist/bench/embed-forward.js`: the pooling runner alone (no HTTP, no scheduler) on the
// bench's MiniLM-shaped BERT against onnxruntime running the transformers.js export of the same
// weights (what transformers.js runs, without its pipeline). The runner packs a shape into runs as
// serving does (at most maxRunPositions positions each); the export runs it whole. Both sessions take
// the runner's settings (poolingSessionSettings: its bounded spin included), so only the graphs
// differ. Per shape, the best and the median wall time and the best CPU time (all threads) of REPS
// runs, the two sides interleaved. The floor the serving figures of `npm run bench:embed` stand on.
// Figures only.
// Knobs: SHAPES=1x16,8x16,32x16,1x128,16x128 (sequences x tokens)  THREADS=1,2  REPS=10
// DTYPES=float32 (the runner's --dtype; float32,bfloat16 times both against the export, which
// stays float32).
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { loadModel } from '../src/model/load-model';
import { createPoolingRunner, poolingSessionSettings } from '../src/model/runner/pooling-runner';
import { createFileSession } from '../src/model/runner/session';
import { ensureBenchBert } from './random-bert';

const cacheDir = join(resolve(__dirname, '..', '..'), '.bench-cache');

interface Best {
  wallMs: number;
  cpuMs: number;
  walls: number[];
}

async function timeOnce(fn: () => Promise<unknown>, best: Best): Promise<void> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  best.wallMs = Math.min(best.wallMs, wall);
  best.walls.push(wall);
  best.cpuMs = Math.min(best.cpuMs, (c.user + c.system) / 1000);
}

/** Both sides `reps` times, alternating, after one warm-up run each: load on a shared machine hits both alike. */
async function timeBoth(a: () => Promise<unknown>, b: () => Promise<unknown>, reps: number): Promise<[Best, Best]> {
  await a();
  await b();
  const bestA: Best = { wallMs: Infinity, cpuMs: Infinity, walls: [] };
  const bestB: Best = { wallMs: Infinity, cpuMs: Infinity, walls: [] };
  for (let r = 0; r < reps; r++) {
    await timeOnce(a, bestA);
    await timeOnce(b, bestB);
  }
  return [bestA, bestB];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

/** best / median wall and best CPU, ms. */
function figures(b: Best): string {
  return `${b.wallMs.toFixed(2).padStart(7)} / ${median(b.walls).toFixed(2).padStart(7)} / ${b.cpuMs.toFixed(2).padStart(7)}`;
}

async function main(): Promise<void> {
  const dir = ensureBenchBert(cacheDir);
  const model = await loadModel({ model: dir, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
  const shapes = (process.env.SHAPES ?? '1x16,8x16,32x16,1x128,16x128').split(',').map((s) => s.split('x').map(Number));
  const threads = (process.env.THREADS ?? '1,2').split(',').map(Number);
  const reps = Number(process.env.REPS ?? 10);
  const dtypes = (process.env.DTYPES ?? 'float32').split(',') as Array<'float32' | 'bfloat16'>;
  console.log('threads  shape     dtype     ortllm runner: wall best / median / CPU ms (CPU per sequence)   transformers.js export (float32): wall best / median / CPU ms');
  for (const t of threads) for (const dtype of dtypes) {
    const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: t, dtype });
    const peer = await createFileSession(join(dir, 'onnx', 'model.onnx'), poolingSessionSettings({ device: 'cpu', intraOpThreads: t }));
    for (const [b, s] of shapes) {
      const batch = Array.from({ length: b }, (_, i) => ({ tokens: Array.from({ length: s }, (_, j) => 5 + ((i * 131 + j * 17) % 30000)) }));
      const ids = new ort.Tensor('int64', BigInt64Array.from(batch.flatMap((x) => x.tokens.map(BigInt))), [b, s]);
      const ones = new ort.Tensor('int64', new BigInt64Array(b * s).fill(1n), [b, s]);
      const zeros = new ort.Tensor('int64', new BigInt64Array(b * s), [b, s]);
      const [ours, theirs] = await timeBoth(() => runner.encode(batch), () => peer.run({ input_ids: ids, attention_mask: ones, token_type_ids: zeros }), reps);
      console.log(
        `${String(t).padStart(7)}  ${`${b}x${s}`.padEnd(8)}  ${dtype.padEnd(8)}  ${figures(ours)} (${(ours.cpuMs / b).toFixed(2)})` + `                   ${figures(theirs)}`,
      );
    }
    await runner.dispose();
    await peer.release();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
