// The runner-alone figures `npm run bench` compares the served engine against: ModelRunner.step
// with no scheduler, sampler or HTTP in the way (the measurement `npm run bench:forward` makes),
// on the engine's intra-op thread count: prefill tokens/s of one prompt, and decode steps at
// batch 1 and batch 32 at a given context.

import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import { defaultIntraOpThreads } from '../src/engine/core/core-host';

export interface RunnerFigures {
  /** Prompt tokens/s of one prefill of `promptLen` tokens (best of a few). */
  prefillTokS: number;
  /** Milliseconds of one batch-1 decode step at `context`. */
  step1Ms: number;
  /** Decode tokens/s at batch 32 and `context`. */
  decode32TokS: number;
}

export async function measureRunner(modelPath: string, promptLen: number, context: number, kvCacheDtype?: string): Promise<RunnerFigures> {
  const model = await loadModel({ model: modelPath, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' });
  const blockSize = 16;
  const batch = 32;
  const steps = 8;
  const ctx = Math.max(1, Math.round(context));
  const perSeq = Math.ceil((Math.max(ctx, promptLen) + steps + 2) / blockSize);
  const runner = await createRunner(model, {
    blockSize,
    numBlocks: (batch + 1) * perSeq,
    device: 'cpu',
    intraOpThreads: defaultIntraOpThreads(),
    ...(kvCacheDtype ? { kvCacheDtype: kvCacheDtype as 'float32' } : {}),
  });
  const table = (s: number) => Array.from({ length: perSeq }, (_, b) => s * perSeq + b);
  const tokens = (n: number, from: number) => Array.from({ length: n }, (_, i) => 1 + ((from + i * 31) % 400));
  try {
    let prefillMs = Infinity;
    for (let r = 0; r < 2; r++) {
      const t = performance.now();
      await runner.step([{ tokens: tokens(promptLen, r), positionOffset: 0, blockTable: table(batch) }]);
      prefillMs = Math.min(prefillMs, performance.now() - t);
    }
    // Decode steps at `ctx` tokens of past read ctx cached rows per sequence whatever they hold,
    // so the cache is not filled first (a 1.1B model would spend minutes on it).
    const decode = async (n: number, i: number) => {
      const t = performance.now();
      await runner.step(Array.from({ length: n }, (_, s) => ({ tokens: [5], positionOffset: ctx + i, blockTable: table(s) })));
      return performance.now() - t;
    };
    await decode(batch, 0); // warm-up
    let step32 = Infinity;
    let step1 = Infinity;
    for (let i = 1; i <= steps; i++) {
      step32 = Math.min(step32, await decode(batch, i));
      step1 = Math.min(step1, await decode(1, i));
    }
    return { prefillTokS: (promptLen / prefillMs) * 1000, step1Ms: step1, decode32TokS: (batch / step32) * 1000 };
  } finally {
    await runner.dispose();
  }
}
