// `node dist/bench/stream-overhead.js [--concurrency 1,32] [--step-us 150,660] [--requests 256,512]
//   [--max-tokens 64] [--rounds 3]`: what the HTTP thread spends per streamed token, with the model
// taken out. The real app (Fastify, Nest, CompletionServing, EngineFrontend, SSE) on the stories260K
// tokenizer, fed by a stand-in engine worker: a real worker thread that, while requests are running,
// busy-waits --step-us per step (the runner's step on these 2 cores: stories260K batch 1 ~150 us,
// batch 32 ~660 us) and posts each step's outputs as the engine worker does (step-wire). So the
// HTTP thread sees the served message flow, including falling behind at high concurrency. The
// client (streaming /v1/completions, ignore_eos, keep-alive) runs in a child process.
// Prints, per concurrency: tokens/s, SSE frames per token, and the HTTP thread's CPU microseconds
// per token (its own utime + stime from /proc, so neither the worker nor the client counts).

import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { isMainThread, MessageChannel, parentPort, Worker, workerData, type MessagePort } from 'node:worker_threads';
import { createApp } from '../src/app-factory';
import { resolveServerConfig } from '../src/config/server-config';
import { emptyIterationStats } from '../src/engine/core/engine-core';
import type { CoreCommand, CoreConnection } from '../src/engine/core/protocol';
import { decodeStep, encodeStep, type WireStep } from '../src/engine/core/step-wire';
import { EngineFrontend } from '../src/engine/engine-frontend';
import { InlineTextProcessor } from '../src/engine/text/text-processor';
import { takeEvents } from '../src/engine/worker/spawn-worker';
import type { RequestOutput } from '../src/engine/types';
import { loadModel } from '../src/model/load-model';

const storiesPath = resolve(__dirname, '..', '..', '..', 'shared', 'models', 'stories260K.gguf');
const WORDS = [' Once', ' upon', ' a', ' time', ',', ' there', ' was', ' a', ' little', ' girl', '.', ' She', ' liked', ' to', ' play'];

function arg(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const numbers = (flag: string, fallback: string) => arg(flag, fallback).split(',').map(Number);

/** The stand-in engine worker: one token per running request per step, --step-us of busy CPU per step. */
function fakeEngineWorker(): void {
  const port = parentPort!;
  const { stepUs, events } = workerData as { stepUs: { value: number }; events: MessagePort };
  const running = new Map<string, { maxTokens: number; generated: number; promptTokens: number }>();
  let looping = false;
  const step = (): void => {
    if (running.size === 0) {
      looping = false;
      return;
    }
    const until = performance.now() + stepUs.value / 1000;
    while (performance.now() < until);
    const outputs: RequestOutput[] = [];
    const iteration = emptyIterationStats();
    for (const [requestId, r] of running) {
      const token = r.generated++;
      const finished = r.generated >= r.maxTokens;
      outputs.push({
        requestId,
        promptTokenIds: [],
        promptLogprobs: null,
        finished,
        numCachedTokens: 0,
        outputs: [{ index: 0, text: WORDS[token % WORDS.length], tokenIds: [100 + (token % 300)], cumulativeLogprob: null, logprobs: null, finishReason: finished ? 'length' : null, stopReason: null }],
      });
      iteration.generationTokens++;
      if (token > 0) iteration.interTokenLatencies.push(stepUs.value / 1e6);
      else iteration.timeToFirstTokens.push(stepUs.value / 1e6);
      if (finished) {
        running.delete(requestId);
        iteration.finished.push({ finishReason: 'length', e2eLatency: 0.01, queueTime: 0, prefillTime: 0, decodeTime: 0.01, inferenceTime: 0.01, promptTokens: r.promptTokens, generationTokens: r.generated, maxTokensParam: r.maxTokens, n: 1, maxGenerationTokens: r.generated });
      }
    }
    const stats = { numRunning: running.size, numWaiting: 0, kvCacheUsage: 0, numBlocks: 100_000, blockSize: 16 };
    events.postMessage(encodeStep({ type: 'step', outputs, stats, iteration }));
    setImmediate(step);
  };
  port.on('message', (command: CoreCommand | { type: 'step-us'; value: number }) => {
    if (command.type === 'step-us') stepUs.value = command.value;
    else if (command.type === 'add') {
      running.set(command.payload.requestId, { maxTokens: command.payload.params.max_tokens ?? 16, generated: 0, promptTokens: command.payload.promptTokenIds.length });
      if (!looping) {
        looping = true;
        setImmediate(step);
      }
    } else if (command.type === 'abort') for (const id of command.payload) running.delete(id);
  });
}

/** Steps arrive as the engine worker's do: on their own port, the waiting ones taken together. */
function fakeCore(worker: Worker, events: MessagePort, frontend: () => EngineFrontend): CoreConnection {
  takeEvents(events, (message: WireStep) => frontend().handleEvent(decodeStep(message)));
  const post = (command: CoreCommand) => worker.postMessage(command);
  return {
    info: { numBlocks: 100_000, blockSize: 16, maxModelLen: 1024 },
    add: (request) => post({ type: 'add', payload: request }),
    encode: () => {
      throw new Error('generation only');
    },
    abort: (requestIds) => post({ type: 'abort', payload: requestIds }),
    pause: () => undefined,
    resume: () => undefined,
    sleep: () => Promise.resolve(),
    wakeUp: () => Promise.resolve(),
    resetPrefixCache: () => Promise.resolve(),
    kvCachedBlocks: () => Promise.resolve({ groups: [] }),
    loadLora: () => Promise.reject(new Error('no LoRA here')),
    unloadLora: () => Promise.resolve(),
    shutdown: () => worker.terminate().then(() => events.close()),
  };
}

/** This thread's CPU milliseconds (utime + stime of the main thread only). */
function mainThreadCpuMs(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The client process: `n` streaming completions, `concurrency` at a time; replies with the chunks it read. */
function client(port: number, n: number, concurrency: number, maxTokens: number): void {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const body = JSON.stringify({ model: 'bench', prompt: 'Once upon a time, there was a little girl named Lily.', max_tokens: maxTokens, ignore_eos: true, temperature: 0, stream: true });
  let next = 0;
  let chunks = 0;
  const one = (): Promise<void> =>
    new Promise((done, fail) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/completions', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          for (let at = text.indexOf('data: '); at >= 0; at = text.indexOf('data: ', at + 6)) chunks++;
        });
        res.on('end', done);
      });
      req.on('error', fail);
      req.end(body);
    });
  const started = performance.now();
  void Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await one();
      }
    }),
  ).then(() => {
    process.send!({ chunks, seconds: (performance.now() - started) / 1000 });
    agent.destroy();
  });
}

function runClient(port: number, n: number, concurrency: number, maxTokens: number): Promise<{ chunks: number; seconds: number }> {
  const child: ChildProcess = fork(__filename, ['--client', String(port), String(n), String(concurrency), String(maxTokens)]);
  return new Promise((done, fail) => {
    child.once('message', (m) => {
      done(m as { chunks: number; seconds: number });
      child.kill();
    });
    child.once('error', fail);
  });
}

async function main(): Promise<void> {
  const concurrency = numbers('--concurrency', '1,32');
  const stepUs = numbers('--step-us', '150,660');
  const requests = numbers('--requests', '256,512');
  const maxTokens = Number(arg('--max-tokens', '64'));
  const rounds = Number(arg('--rounds', '3'));
  const config = resolveServerConfig({ model: storiesPath, servedModelNames: ['bench'], disableUvicornAccessLog: true, logLevel: 'warning', disableLogStats: true }, {});
  const model = await loadModel({ model: storiesPath, loadFormat: 'auto', loadWeights: false, skipTokenizer: false, chatTemplate: null, generationConfig: 'vllm' });
  const events = new MessageChannel();
  const worker = new Worker(__filename, { workerData: { stepUs: { value: stepUs[0] }, events: events.port2 }, transferList: [events.port2] });
  const frontend: EngineFrontend = new EngineFrontend(model, { maxNumSeqs: 256, schedulingPolicy: 'fcfs' }, { numBlocks: 100_000, blockSize: 16, maxModelLen: 1024 }, new InlineTextProcessor(model.tokenizer!, model.chatTemplate));
  frontend.attach(fakeCore(worker, events.port1, () => frontend));
  const app = await createApp(config, { engine: frontend });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpAdapter().getInstance().server.address() as AddressInfo).port;
  await runClient(port, 8, 2, maxTokens); // warm-up
  console.log(`streamed /v1/completions, ${maxTokens} tokens each; HTTP thread CPU per token (us), ${rounds} rounds`);
  for (const [i, c] of concurrency.entries()) {
    worker.postMessage({ type: 'step-us', value: stepUs[i] ?? stepUs[stepUs.length - 1] });
    const n = requests[i] ?? requests[requests.length - 1];
    const rows: string[] = [];
    for (let r = 0; r < rounds; r++) {
      const cpu0 = mainThreadCpuMs();
      const { chunks, seconds } = await runClient(port, n, c, maxTokens);
      const cpu = mainThreadCpuMs() - cpu0;
      // Every request streams exactly maxTokens tokens (the stand-in worker ignores EOS); a frame
      // may carry several when the HTTP thread fell behind (engine/output-merge.ts), so the cost
      // is per token, with frames per token beside it.
      const tokens = n * maxTokens;
      rows.push(`${((cpu * 1000) / tokens).toFixed(1)} us/token at ${(tokens / seconds).toFixed(0)} tok/s, ${(chunks / tokens).toFixed(2)} frames/token`);
    }
    console.log(`concurrency ${c} (step ${stepUs[i] ?? stepUs[stepUs.length - 1]} us): ${rows.join(' | ')}`);
  }
  await app.close();
  await frontend.shutdown();
}

if (!isMainThread) fakeEngineWorker();
else if (process.argv[2] === '--client') client(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6]));
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
