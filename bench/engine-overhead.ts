// `node dist/bench/engine-overhead.js [--prompt-lens 37,700] [--max-tokens 64] [--batch 1,32] [--model GGUF]
//   [--rounds N] [--warmup 1]`:
// the engine core's own cost per decode step, above the model: EngineCore (scheduler, KV block
// bookkeeping, prefix-cache hashing, sampling, detokenizer, stop checks, outputs), with the step
// event encoded for the worker boundary as the engine worker does, and no HTTP.
// - Without --model, over a runner that returns fixed logits at once: microseconds of CPU per
//   step by prompt length, so anything in the per-token path that grows with the context shows
//   as a difference between the rows.
// - With --model, over the real runner (the server's block size and threads): the mean decode
//   step of each request (median over requests, what the served TPOT p50 is) beside the runner
//   alone on the same workload (runner-ceiling.ts). Their ratio is the engine's share of the
//   served TPOT; what the served ratio adds to it is the HTTP side's. The runner's own steps are
//   also timed inside the engine ("runner in engine"). Results: docs/perf/engine-overhead.md.

import { serialize } from 'node:v8';
import { CompletionProcessorFactory } from '../src/engine/core/completion-processor';
import { EngineCore } from '../src/engine/core/engine-core';
import { encodeStep } from '../src/engine/core/step-wire';
import { defaultSamplingParams } from '../src/engine/sampling-params';
import { loadTokenizer } from '../src/model/load-model';
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import type { ModelArchConfig, ModelRunner, StepSequence } from '../src/model/types';
import { resolve } from 'node:path';
import { median, serverThreads, touchKvCache } from './runner-ceiling';

const storiesPath = resolve(__dirname, '..', '..', '..', 'shared', 'models', 'stories260K.gguf');

function arg(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/**
 * A runner that costs nothing: every sequence gets the same logits (a different argmax per step).
 * Its logits buffer is reused, as the real runners' head buffer is (segmented-runner.ts), so the
 * collector's time is the engine's own allocation.
 */
function instantRunner(vocabSize: number, numBlocks: number, blockSize: number): ModelRunner {
  let step = 0;
  let buffer = new Float32Array(0);
  return {
    config: { vocabSize } as ModelArchConfig,
    blockSize,
    numBlocks,
    step(batch: readonly StepSequence[]) {
      step++;
      if (buffer.length < batch.length * vocabSize) buffer = new Float32Array(batch.length * vocabSize);
      const logits = buffer.subarray(0, batch.length * vocabSize);
      logits.fill(0);
      for (let s = 0; s < batch.length; s++) logits[s * vocabSize + 100 + ((step * 7 + s) % 300)] = 10;
      return Promise.resolve({ logits, allLogits: batch.map(() => null) });
    },
    copyBlocks: () => undefined,
    dispose: () => Promise.resolve(),
  };
}

async function main(): Promise<void> {
  const promptLens = arg('--prompt-lens', '37,700').split(',').map(Number);
  const batches = arg('--batch', '1,32').split(',').map(Number);
  const maxTokens = Number(arg('--max-tokens', '64'));
  const modelPath = process.argv.includes('--model') ? arg('--model', '') : null;
  const rounds = Number(arg('--rounds', modelPath ? '6' : '20'));
  // Each row's first round only warms up (the JIT, the row's new core): the first row used to
  // read 30-60% above the same workload run later in the process.
  const warmup = Number(arg('--warmup', '1'));
  const { tokenizer } = await loadTokenizer(storiesPath);
  const blockSize = 16;
  const maxModelLen = Math.max(...promptLens) + maxTokens + 16;
  const perSeq = Math.ceil(maxModelLen / blockSize);
  const engineBlocks = perSeq * Math.max(...batches) * 2;
  const model = modelPath ? await loadModel({ model: modelPath, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'vllm' }) : null;
  const vocabSize = model?.config.vocabSize ?? 512;
  // The real runner gets perSeq more blocks than the engine sees: the runner-alone runs use those.
  const runner = model
    ? await createRunner(model, { blockSize, numBlocks: engineBlocks + perSeq, device: 'cpu', intraOpThreads: serverThreads() })
    : instantRunner(vocabSize, engineBlocks, blockSize);
  if (model) touchKvCache(runner);
  // Times the runner's own steps inside the engine too: the engine's ms/step less this is the
  // core's share, whatever the runner's step does to its neighbours' caches.
  let insideMs = 0;
  const engineRunner: ModelRunner = {
    config: runner.config,
    blockSize,
    numBlocks: engineBlocks,
    step: async (b) => {
      const started = performance.now();
      const result = await runner.step(b);
      insideMs += performance.now() - started;
      return result;
    },
    copyBlocks: (p) => runner.copyBlocks(p),
    dispose: () => Promise.resolve(),
  };
  const aloneTable = Array.from({ length: perSeq }, (_, b) => engineBlocks + b);
  /** The runner alone as the served request runs it: its prompt, then maxTokens - 1 decode steps; ms per step. */
  const aloneRun = async (promptLen: number, round: number): Promise<number> => {
    await runner.step([{ tokens: Array.from({ length: promptLen }, (_, i) => 3 + ((i * 17 + round * 7) % 500)), positionOffset: 0, blockTable: aloneTable }]);
    const started = performance.now();
    for (let i = 0; i < maxTokens - 1; i++) await runner.step([{ tokens: [5 + (i % 300)], positionOffset: promptLen + i, blockTable: aloneTable }]);
    return (performance.now() - started) / (maxTokens - 1);
  };
  console.log(
    modelPath
      ? 'prompt  batch   engine ms/step   runner in engine   runner alone ms/step   ratio   (median over rounds of each request\'s mean decode step; engine and runner rounds alternate)'
      : 'prompt  batch   CPU us/step (decode steps, engine core + wire encoding)',
  );
  for (const batch of batches) {
    for (const promptLen of promptLens) {
      let wireBytes = 0;
      const core = new EngineCore(
        engineRunner,
        { maxModelLen, maxNumSeqs: batch, maxNumBatchedTokens: 8192, schedulingPolicy: 'fcfs', enablePrefixCaching: true },
        new CompletionProcessorFactory({ vocabSize, eosTokenIds: [2], maxModelLen, tokenizer }),
        { onStep: (outputs, stats, iteration) => void (wireBytes += serialize(encodeStep({ type: 'step', outputs, stats, iteration })).length) },
      );
      let id = 0;
      let decodeCpu = 0;
      let decodeSteps = 0;
      const engineMeans: number[] = [];
      const insideMeans: number[] = [];
      const aloneMeans: number[] = [];
      for (let r = -warmup; r < rounds; r++) {
        for (let s = 0; s < batch; s++) {
          const prompt = Array.from({ length: promptLen }, (_, i) => 3 + ((i * 13 + id * 101) % 500));
          core.addRequest({ requestId: `r${id++}`, promptTokenIds: prompt, params: { ...defaultSamplingParams(), temperature: 0, ignore_eos: true, max_tokens: maxTokens, output_kind: 1 } });
        }
        await core.step(); // the prefills
        const before = process.cpuUsage();
        const started = performance.now();
        insideMs = 0;
        let steps = 0;
        while (core.hasWork()) {
          await core.step();
          steps++;
        }
        const elapsed = performance.now() - started;
        const used = process.cpuUsage(before);
        if (model && batch === 1) {
          const alone = await aloneRun(promptLen, r + warmup);
          if (r >= 0) aloneMeans.push(alone);
        }
        if (r < 0) continue;
        engineMeans.push(elapsed / steps);
        insideMeans.push(insideMs / steps);
        decodeSteps += steps;
        decodeCpu += used.user + used.system;
      }
      if (!modelPath) {
        console.log(`${String(promptLen).padStart(6)} ${String(batch).padStart(6)}   ${(decodeCpu / decodeSteps).toFixed(1).padStart(8)}   (${decodeSteps} steps, ${(wireBytes / decodeSteps).toFixed(0)} wire bytes/step)`);
        continue;
      }
      const engineMs = median(engineMeans);
      const aloneMs = aloneMeans.length > 0 ? median(aloneMeans) : NaN;
      console.log(`${String(promptLen).padStart(6)} ${String(batch).padStart(6)}   ${engineMs.toFixed(3).padStart(14)}   ${median(insideMeans).toFixed(3).padStart(16)}   ${aloneMs.toFixed(3).padStart(20)}   ${(engineMs / aloneMs).toFixed(2).padStart(5)}`);
    }
  }
  await runner.dispose();
}


main().catch((err) => {
  console.error(err);
  process.exit(1);
});
