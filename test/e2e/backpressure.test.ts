// Streaming clients that stop reading, on the real server (stories260K, --stream-stall-timeout 5):
// their requests are paused (nothing running or waiting; their KV blocks kept) instead of
// generating into memory, the server's RSS stays bounded, and once stalled past the timeout they
// are disconnected and their requests end as aborts, freeing their KV. (That a paused request
// resumes to exactly its uninterrupted output: pause-determinism.test.ts, and on the engine core
// test/unit/engine/engine-pause.test.ts.)

import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { readFileSync } from 'node:fs';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const STALLED_CLIENTS = 8;
const STALL_TIMEOUT_S = 5;
/**
 * 4 choices x 2000 tokens with 20 top logprobs each (~3 KB per chunk): ~24 MB of SSE per request,
 * far more than the few MB the kernel's socket buffers take before write() says to wait.
 */
const BIG_STREAM = {
  messages: [{ role: 'user', content: 'Once upon a time' }],
  max_tokens: 2000,
  n: 4,
  temperature: 1,
  seed: 7,
  logprobs: true,
  top_logprobs: 20,
  ignore_eos: true,
  stream: true,
};

function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

/** Starts a streaming request whose response is never read; resolves once the headers came. */
function stalledStream(baseUrl: string, body: object): Promise<{ res: IncomingMessage }> {
  const url = new URL('/v1/chat/completions', baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.pause();
      res.on('error', () => undefined);
      resolve({ res });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

needs(defaultTestModel()).describe('backpressure: clients that stop reading', () => {
  let serving: Serving;
  beforeAll(async () => {
    serving = await startServing(['--stream-stall-timeout', String(STALL_TIMEOUT_S)]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => serving?.server.stop());

  const settled = async (): Promise<boolean> =>
    (await serving.metric('vllm:num_requests_running')) === 0 && (await serving.metric('vllm:num_requests_waiting')) === 0;
  const idle = async (): Promise<boolean> => (await settled()) && (await serving.metric('vllm:kv_cache_usage_perc')) === 0;

  it('pauses stalled streams with their memory bounded, then aborts them after the stall timeout', async () => {
    // Warm up with the same load read at once (the engine's and V8's memory reach their working
    // size for this batch), then the baseline.
    const warm = await Promise.all(
      Array.from({ length: STALLED_CLIENTS }, () => serving.post('/v1/chat/completions', { ...BIG_STREAM, max_tokens: 300 })),
    );
    expect(warm.map((r) => r.status)).toEqual(warm.map(() => 200));
    const pid = serving.server.child.pid!;
    const before = rssBytes(pid);
    const abortsBefore = await serving.metric('vllm:request_success_total', 'finished_reason="abort"');
    const finishedBefore = await serving.metric('vllm:request_success_total');

    const streams = await Promise.all(Array.from({ length: STALLED_CLIENTS }, () => stalledStream(serving.server.baseUrl, BIG_STREAM)));
    // Every request is set aside: nothing runs, nothing waits, none finished; they keep their KV.
    await waitFor(settled, 30_000, 'all stalled requests paused');
    expect(await serving.metric('vllm:kv_cache_usage_perc')).toBeGreaterThan(0);
    const pausedAt = Date.now();
    expect(await serving.metric('vllm:request_success_total')).toBe(finishedBefore);
    // Memory stays where it is while they stay stalled (without backpressure it climbs by some
    // 10 MiB/s here, past +250 MiB before these streams end).
    const paused = rssBytes(pid);
    await new Promise((r) => setTimeout(r, 2000));
    const later = rssBytes(pid);
    console.log(`RSS with ${STALLED_CLIENTS} stalled streams: +${((paused - before) / 2 ** 20).toFixed(1)} MiB, then +${((later - paused) / 2 ** 20).toFixed(1)} MiB in 2 s`);
    expect(later - paused).toBeLessThan(8 * 2 ** 20);
    expect(paused - before).toBeLessThan(96 * 2 ** 20);

    // Past the stall timeout the server hangs up on them and the engine counts them as aborts.
    await waitFor(
      async () => (await serving.metric('vllm:request_success_total', 'finished_reason="abort"')) - abortsBefore === STALLED_CLIENTS,
      (STALL_TIMEOUT_S + 20) * 1000,
      'the stalled requests aborted',
    );
    // Not before the timeout (the stall began a little before the last request paused).
    expect(Date.now() - pausedAt).toBeGreaterThan((STALL_TIMEOUT_S - 2) * 1000);
    // (A client that reads nothing does not see the hang-up either; close its side.)
    for (const { res } of streams) res.destroy();
    // Aborted, they no longer hold any KV block.
    expect(await idle()).toBe(true);
  }, 120_000);
});
