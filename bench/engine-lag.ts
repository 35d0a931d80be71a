// Event-loop lag of the calling (HTTP) thread while the engine is under load, and the
// engine's step rate. Usage (after `npm run build`):
//   node dist/bench/engine-lag.js [--model ../shared/models/stories260K.gguf] [--requests 128]
//        [--concurrency 32] [--max-tokens 64] [--threads N] [--in-process]
// Prints p50/p99/max event-loop delay (ms), engine steps/s and generated tokens/s.

import { resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createEngine } from '../src/engine';
import { defaultSamplingParams } from '../src/engine/sampling-params';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string', default: resolve(__dirname, '../../../shared/models/stories260K.gguf') },
      requests: { type: 'string', default: '128' },
      concurrency: { type: 'string', default: '32' },
      'max-tokens': { type: 'string', default: '64' },
      'in-process': { type: 'boolean', default: false },
      threads: { type: 'string' },
    },
  });
  const numRequests = Number(values.requests);
  const concurrency = Number(values.concurrency);
  const maxTokens = Number(values['max-tokens']);
  const engine = await createEngine({
    load: { model: values.model, loadFormat: 'auto', loadWeights: false, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto' },
    modelName: 'bench',
    maxModelLen: null,
    maxNumSeqs: concurrency,
    maxNumBatchedTokens: 2048,
    schedulingPolicy: 'fcfs',
    kvCacheMemoryBytes: null,
    blockSize: 16,
    enablePrefixCaching: true,
    device: 'cpu',
    intraOpThreads: values.threads ? Number(values.threads) : null,
    useWorker: !values['in-process'],
  });
  const tokenizer = engine.tokenizer!;
  const texts = ['Once upon a time', 'The little dog ran to the park and', 'Lily and Ben were best friends. One day they', 'Tom had a big red ball'];

  let steps = 0;
  let generated = 0;
  engine.onIteration((s) => {
    steps++;
    generated += s.generationTokens;
  });
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  const start = performance.now();
  let next = 0;
  let streamedChunks = 0;
  const worker = async () => {
    while (next < numRequests) {
      const i = next++;
      const params = { ...defaultSamplingParams(), temperature: 0.8, seed: i, max_tokens: maxTokens, ignore_eos: true, output_kind: 1 as const };
      const promptTokenIds = tokenizer.encode(texts[i % texts.length], { addSpecialTokens: true });
      for await (const out of engine.generate({ requestId: `bench-${i}`, promptTokenIds, params })) {
        // The HTTP layer would format and write an SSE frame here.
        streamedChunks += out.outputs.length;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  lag.disable();
  await engine.shutdown();

  const ms = (ns: number) => (ns / 1e6).toFixed(2);
  console.log(
    JSON.stringify(
      {
        mode: values['in-process'] ? 'in-process' : 'worker',
        intraOpThreads: values.threads ?? 'engine default (every core)',
        requests: numRequests,
        concurrency,
        maxTokens,
        seconds: Number(seconds.toFixed(2)),
        engineSteps: steps,
        stepsPerSecond: Number((steps / seconds).toFixed(1)),
        generatedTokensPerSecond: Number((generated / seconds).toFixed(1)),
        streamedChunks,
        eventLoopLagMs: { p50: ms(lag.percentile(50)), p99: ms(lag.percentile(99)), max: ms(lag.max) },
      },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
