// Prefill and batch-1 decode of a Phi-4-mini-shaped Q8_0 model (partial rotary 0.75, LongRoPE;
// hidden 1024, 4 layers, 16 heads of 64, 4 KV heads; seeded random weights, bench/random-phi3.ts),
// with the addon's Q8_0 path (native-q8, which rotates the partial heads itself) and with
// onnxruntime's MatMulNBits segments, one thread each, alternating twice. Figures: docs/perf/phi3.md.
//
//   node dist/bench/phi3-decode.js [DIR]
import { join, resolve } from 'node:path';
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import { PHI4_MINI_TOY, writePhi3Model } from './random-phi3';

const ROOT = resolve(__dirname, '..', '..');
const PROMPT = 64;
const DECODED = 32;

async function main(): Promise<void> {
  const shape = { ...PHI4_MINI_TOY, hiddenSize: 1024, intermediateSize: 2752, numLayers: 4, numHeads: 16, numKvHeads: 4 };
  const dir = process.argv[2] ?? join(ROOT, '.bench-cache', 'phi3-decode');
  const { gguf } = await writePhi3Model(dir, shape, join(ROOT, '..', 'shared', 'models', 'stories260K.gguf'), 3, 'q8_0');
  const model = await loadModel({ model: gguf, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
  const blocks = Array.from({ length: 8 }, (_, i) => i);
  for (const nativeQ8Gemm of [true, false, true, false]) {
    const runner = await createRunner(model, { blockSize: 16, numBlocks: 8, device: 'cpu', maxModelLen: 4096, nativeQ8Gemm, intraOpThreads: 1 });
    let start = process.hrtime.bigint();
    await runner.step([{ tokens: Array.from({ length: PROMPT }, (_, i) => 3 + i), positionOffset: 0, blockTable: blocks }]);
    const prefillMs = Number(process.hrtime.bigint() - start) / 1e6;
    start = process.hrtime.bigint();
    for (let i = 0; i < DECODED; i++) await runner.step([{ tokens: [5], positionOffset: PROMPT + i, blockTable: blocks }]);
    const decodeMs = Number(process.hrtime.bigint() - start) / 1e6;
    console.log(`${nativeQ8Gemm ? 'native-q8    ' : 'onnx-segments'}: prefill ${PROMPT} tokens ${prefillMs.toFixed(1)} ms, decode ${((DECODED * 1000) / decodeMs).toFixed(1)} tok/s`);
    await runner.dispose();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
