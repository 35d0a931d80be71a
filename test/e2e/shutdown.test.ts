// Graceful shutdown of the real server: on SIGTERM it answers new requests 503 (the listener
// stays open), lets the in-flight stream finish, and exits 0; with --shutdown-timeout the wait is
// bounded (the engine is then stopped and the stream ends with an error frame); a second signal
// stops the engine at once and still exits 0, never aborting inside onnxruntime.

import { get } from 'node:http';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';

const model = defaultTestModel();
const onModel = needs(model);

/** Completions of the streams that must outlast a shutdown bound (the small model decodes ~50k tok/s at 32 streams and more). */
const LONG_N = 64;

/** Starts a long streaming completion; resolves once the first frame arrived. */
async function startLongStream(server: TestServer, maxTokens: number, n = 1): Promise<{ rest: Promise<string> }> {
  const res = await fetch(`${server.baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: maxTokens, n, ignore_eos: true, stream: true }),
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('data: ')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return text;
      text += decoder.decode(value, { stream: true });
    }
  })();
  return { rest };
}

/** A request on a brand-new connection (no keep-alive reuse): resolves to the status or the error code. */
function freshConnection(baseUrl: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = get(`${baseUrl}/health`, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

onModel.describe('graceful shutdown', () => {
  it('finishes the in-flight stream, answers new requests 503 meanwhile, exits 0', async () => {
    // The drain is bounded by --shutdown-timeout (30 s by default), which a slow or busy CI machine
    // could reach: this case is about the unbounded wait, so the bound is set far away.
    const server = await startServer(['--shutdown-timeout', '600']);
    // Long enough to outlast the 503 check by far (a single 400-token stream finishes in ~40 ms on
    // a fast machine): 16 x 2000 tokens, under a second there, tens of seconds on a slow one.
    const { rest } = await startLongStream(server, 2000, 16);
    const exit = server.stop('SIGTERM');
    // The listener stays open while the stream goes on: a new connection gets 503, not a reset.
    await waitFor(async () => (await freshConnection(server.baseUrl)) === 503, 10_000, 'a 503 on a new connection');
    const text = await rest;
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text).toContain('"finish_reason":"length"');
    expect(await exit).toBe(0);
    expect(server.output()).toContain('SIGTERM: draining');
  }, SERVER_START_TIMEOUT_MS);

  it('bounds the wait with --shutdown-timeout', async () => {
    const server = await startServer(['--shutdown-timeout', '1']);
    // 64 x 2000 tokens: seconds even at stories260K's ~50k streamed tok/s, well past the 1 s bound.
    const { rest } = await startLongStream(server, 2000, LONG_N);
    const started = Date.now();
    expect(await server.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
    // The engine was stopped under the request: it ends with an error frame, not a length finish.
    const text = await rest;
    expect(text).toContain('"error":{');
    expect(text).not.toContain('"finish_reason":"length"');
  }, SERVER_START_TIMEOUT_MS);

  it('exits 0 on a second signal during the drain, without a native abort (3 runs, SIGTERM then SIGTERM or SIGINT)', async () => {
    for (const second of ['SIGTERM', 'SIGINT', 'SIGTERM'] as const) {
      const server = await startServer();
      // Long enough that the engine is mid-step when the second signal lands.
      const { rest } = await startLongStream(server, 2000, LONG_N);
      server.child.kill('SIGTERM');
      await waitFor(() => server.output().includes('SIGTERM: draining'), 10_000, 'the drain log line');
      const exitCode = server.stop(second);
      const code = await exitCode;
      expect([second, code, server.child.signalCode]).toEqual([second, 0, null]);
      expect(server.output()).not.toMatch(/terminate called|Napi::Error|Aborted|core dumped/);
      expect(server.output()).toContain(`${second} again: stopping the engine now`);
      // The stream was cut by the engine stop: an error frame, not a length finish.
      const text = await rest;
      expect(text).not.toContain('"finish_reason":"length"');
    }
  }, 3 * SERVER_START_TIMEOUT_MS);
});
