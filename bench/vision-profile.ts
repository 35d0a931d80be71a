// `node dist/bench/vision-profile.js [--family gemma3|llava|qwen2.5vl] [--layers N] [--threads N]`: where
// ortllm's vision tower spends an image's encode, per ONNX op type, from onnxruntime's profiler, on
// the GGUF pair `npm run bench:vision` writes (.bench-cache/vision-*; F32 mmproj). One warm-up
// encode, then one profiled.
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { loadModel } from '../src/model/load-model';
import { profileSessionsInto } from '../src/model/runner/session';
import { preprocessImage } from '../src/model/vision/preprocess-image';
import { loadOptions } from '../test/helpers/model-files';
import { randomImage } from '../test/unit/model/vision/random-image';
import { arg } from './llama-parity';
import { print, summarize, takeProfile } from './ort-profile';
import { ensureVisionModel, TOWERS, towerFlops, type BenchFamily } from './vision-models';

const root = resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  const family = arg('family', 'gemma3') as BenchFamily;
  const layers = Number(arg('layers', '1'));
  const threads = Number(arg('threads', String(availableParallelism())));
  const cacheDir = join(root, '.bench-cache');
  const model = await loadModel(loadOptions(await ensureVisionModel(family, layers, 'f32', cacheDir)));
  const prefix = `vision-profile-${process.pid}`;
  const sessions = profileSessionsInto(join(cacheDir, prefix));
  const encoder = await model.vision!.createEncoder({ intraOpThreads: threads });
  const side = TOWERS[family].imageSize;
  const image = preprocessImage(model.vision!.processor, randomImage(side, side, 1));
  encoder.encode(image); // run 0: warm-up
  const start = performance.now();
  encoder.encode(image); // run 1
  const wall = performance.now() - start;
  sessions[0].endProfiling();
  await encoder.release();
  const gflop = towerFlops(family, layers) / 1e9;
  console.log(`${family}, ${layers} tower layers, ${threads} threads: ${wall.toFixed(0)} ms, ${gflop.toFixed(1)} GFLOP, ${(gflop / (wall / 1000)).toFixed(1)} GFLOP/s`);
  print('encode', 1, summarize(takeProfile(cacheDir, prefix), new Set([1])));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
