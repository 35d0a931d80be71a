// The runner-alone decode ceiling that `npm run bench` compares the served engine against:
// decode tokens/s of ModelRunner.step at a given batch and context, with no scheduler, sampler
// or HTTP in the way (the same measurement `npm run bench:forward` makes). It uses the engine's
// intra-op thread count: with ORT's default (every core) the "ceiling" ran on twice the threads
// the served engine gets on 2 cores (100M Q8_0, batch 32: 126-135 vs 208-246 ms per step).

import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import { defaultIntraOpThreads } from '../src/engine/core/core-host';

export async function measureDecodeCeiling(modelPath: string, batch: number, context: number, steps = 16): Promise<number> {
  const model = await loadModel({
    model: modelPath,
    loadFormat: 'auto',
    loadWeights: true,
    skipTokenizer: true,
    chatTemplate: null,
    generationConfig: 'vllm',
  });
  const blockSize = 16;
  const blocksPerSeq = Math.ceil((context + steps + 1) / blockSize);
  const runner = await createRunner(model, {
    blockSize,
    numBlocks: batch * blocksPerSeq,
    device: 'cpu',
    intraOpThreads: defaultIntraOpThreads(),
  });
  try {
    const ctx = Math.max(1, Math.round(context));
    const tables = Array.from({ length: batch }, (_, s) => Array.from({ length: blocksPerSeq }, (_, b) => s * blocksPerSeq + b));
    // Fill each sequence's cache with a prompt of `ctx` tokens, then time decode steps.
    for (let s = 0; s < batch; s++) {
      await runner.step([{ tokens: Array.from({ length: ctx }, (_, i) => 1 + (i % 100)), positionOffset: 0, blockTable: tables[s] }]);
    }
    const decodeStep = (i: number) =>
      runner.step(tables.map((blockTable) => ({ tokens: [5], positionOffset: ctx + i, blockTable })));
    await decodeStep(0); // warm-up
    const start = performance.now();
    for (let i = 1; i <= steps; i++) await decodeStep(i);
    return (batch * steps) / ((performance.now() - start) / 1000);
  } finally {
    await runner.dispose();
  }
}
