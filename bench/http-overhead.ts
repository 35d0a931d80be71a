// `node dist/bench/http-overhead.js`: what the HTTP thread spends per request when the model
// costs nothing. The real app (Fastify, Nest pipes and hooks, serving, EngineFrontend) on the
// bench BERT's tokenizer and pooler, with a core that answers each pooling request with a fixed
// vector on the next turn of the event loop. CPU time per request of this one thread, in-process
// (Fastify inject: no socket) and over a real localhost socket (client and server in this process;
// the client alone is measured against a bare node:http server and subtracted). Figures only.
// Knobs: HTTP_OVERHEAD_REQUESTS=4000  HTTP_OVERHEAD_CONCURRENCY=32  HTTP_OVERHEAD_TOKENS=16.
// Results: docs/perf/http-overhead.md.

import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { createApp } from '../src/app-factory';
import { resolveServerConfig } from '../src/config/server-config';
import { emptyIterationStats } from '../src/engine/core/engine-core';
import type { CoreConnection, CoreEvent } from '../src/engine/core/protocol';
import { EngineFrontend } from '../src/engine/engine-frontend';
import { InlineTextProcessor } from '../src/engine/text/text-processor';
import { loadModel } from '../src/model/load-model';
import { benchWord, ensureBenchBert } from './random-bert';

const cacheDir = join(resolve(__dirname, '..', '..'), '.bench-cache');

function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** A core that pools instantly: every encode request gets `vector` on the next turn of the event loop. */
function instantCore(frontend: () => EngineFrontend, vector: Float32Array): CoreConnection {
  return {
    info: { numBlocks: 0, blockSize: 16, maxModelLen: 512 },
    add: () => {
      throw new Error('pooling only');
    },
    encode: (request) =>
      setImmediate(() => {
        const event: CoreEvent = {
          type: 'step',
          outputs: [],
          pooled: [{ requestId: request.requestId, data: vector.slice() }],
          stats: { numRunning: 0, numWaiting: 0, kvCacheUsage: 0, numBlocks: 0, blockSize: 16 },
          iteration: emptyIterationStats(),
        };
        frontend().handleEvent(event);
      }),
    abort: () => undefined,
    // Pooling requests are never paused (only streams that fall behind are).
    pause: () => undefined,
    resume: () => undefined,
    sleep: () => Promise.resolve(),
    wakeUp: () => Promise.resolve(),
    resetPrefixCache: () => Promise.resolve(),
    kvCachedBlocks: () => Promise.resolve({ groups: [] }),
    loadLora: () => Promise.reject(new Error('no LoRA here')),
    unloadLora: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

function post(agent: Agent, port: number, path: string, body: string): Promise<number> {
  return new Promise((done, fail) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        done(res.statusCode ?? 0);
      });
    });
    req.on('error', fail);
    req.end(body);
  });
}

/** CPU ms per request of `n` requests, `concurrency` at a time. */
async function measure(n: number, concurrency: number, send: (i: number) => Promise<number>): Promise<number> {
  let next = 0;
  const c0 = cpuMs();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const status = await send(next++);
        if (status !== 200) throw new Error(`status ${status}`);
      }
    }),
  );
  return (cpuMs() - c0) / n;
}

async function main(): Promise<void> {
  const n = envNumber('HTTP_OVERHEAD_REQUESTS', 4000);
  const concurrency = envNumber('HTTP_OVERHEAD_CONCURRENCY', 32);
  const tokens = envNumber('HTTP_OVERHEAD_TOKENS', 16);
  const modelDir = ensureBenchBert(cacheDir);
  const config = resolveServerConfig({ model: modelDir, disableUvicornAccessLog: true, logLevel: 'warning' }, {});
  const model = await loadModel({ model: modelDir, loadFormat: 'auto', loadWeights: false, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto' });
  const frontend: EngineFrontend = new EngineFrontend(model, { maxNumSeqs: config.maxNumSeqs, schedulingPolicy: 'fcfs' }, { numBlocks: 0, blockSize: 16, maxModelLen: 512 }, new InlineTextProcessor(model.tokenizer!, model.chatTemplate));
  const vector = Float32Array.from({ length: model.config.hiddenSize }, (_, i) => Math.sin(i + 1) / 7);
  frontend.attach(instantCore(() => frontend, vector));
  const app = await createApp(config, { engine: frontend });
  await app.listen(0, '127.0.0.1');
  const fastify = app.getHttpAdapter().getInstance();
  const port = (fastify.server.address() as AddressInfo).port;
  const body = (i: number) => JSON.stringify({ input: Array.from({ length: tokens - 2 }, (_, j) => benchWord(i * 7919 + j)).join(' '), encoding_format: 'float' });

  const bare = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ embedding: Array.from(vector) }] })));
  });
  await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
  const barePort = (bare.address() as AddressInfo).port;

  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const rows: Array<[string, number]> = [];
  // Warm-up (JIT, caches), then each measurement twice, best kept.
  const runs: Array<[string, () => Promise<number>]> = [
    ['inject (no socket)', () => measure(n, concurrency, (i) => fastify.inject({ method: 'POST', url: '/v1/embeddings', payload: body(i), headers: { 'content-type': 'application/json' } }).then((r) => r.statusCode))],
    ['socket: client + server', () => measure(n, concurrency, (i) => post(agent, port, '/v1/embeddings', body(i)))],
    ['socket: client + bare node:http', () => measure(n, concurrency, (i) => post(agent, barePort, '/', body(i)))],
  ];
  for (const [, run] of runs) await run();
  for (const [name, run] of runs) rows.push([name, Math.min(await run(), await run())]);
  await app.close();
  bare.close();
  agent.destroy();

  console.log(`/v1/embeddings, ${tokens}-token inputs, concurrency ${concurrency}, ${n} requests per run, best of 2; CPU ms per request of this thread`);
  for (const [name, ms] of rows) console.log(`${name.padEnd(34)} ${ms.toFixed(3)}`);
  const server = rows[1][1] - rows[2][1];
  console.log(`${'server over a socket (difference)'.padEnd(34)} ${server.toFixed(3)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
