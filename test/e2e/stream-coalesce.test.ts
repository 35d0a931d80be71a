// A streaming client that falls behind gets the outputs queued meanwhile folded into fewer,
// larger chunks (src/engine/output-merge.ts), and what it reads adds up to exactly what a
// non-streaming request returns: per choice the same text, token ids and logprobs, the same usage
// (real server, stories260K, greedy, 50 top logprobs).

import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, sseFrames, startServing, type Serving } from './completions-helpers';

const MAX_TOKENS = 2000;
const N = 1;
/**
 * ~7 KB of SSE per token: far more than the socket buffers take before the server must wait.
 * Greedy: a paused request recomputes its KV when resumed, and with sampling (n > 1 needs it)
 * the last-bit differences that brings can flip a sampled token against the non-streamed run.
 */
const BODY = {
  messages: [{ role: 'user', content: 'Once upon a time' }],
  max_tokens: MAX_TOKENS,
  n: N,
  temperature: 0,
  top_logprobs: 50,
  logprobs: true,
  ignore_eos: true,
  return_token_ids: true,
};

interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

interface Choice {
  content: string;
  tokenIds: number[];
  logprobs: TokenLogprob[];
  finishReason: string | null;
}

/** Starts a streaming request and leaves its response unread; resolves once the headers came. */
function unreadStream(baseUrl: string, body: object): Promise<IncomingMessage> {
  const url = new URL('/v1/chat/completions', baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on('data', (b: Buffer) => parts.push(b));
    res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    res.on('error', reject);
    res.resume();
  });
}

/**
 * The same top entries with values within `tolerance`. The paused request recomputes its KV on
 * resume and runs in other batches, so the values move in their last bits: an entry may then trade places with the next one at the cut-off,
 * so one present on one side only must sit at that side's cut-off.
 */
function expectSameTop(streamed: TokenLogprob['top_logprobs'], whole: TokenLogprob['top_logprobs'], tolerance: number): void {
  expect(streamed).toHaveLength(whole.length);
  const key = (t: TokenLogprob['top_logprobs'][number]): string => `${t.token}\u0000${(t.bytes ?? []).join(',')}`;
  const sides = [streamed, whole].map((top) => ({ values: new Map(top.map((t) => [key(t), t.logprob])), cutoff: Math.min(...top.map((t) => t.logprob)) }));
  for (const [mine, other] of [
    [0, 1],
    [1, 0],
  ]) {
    for (const [token, value] of sides[mine].values) {
      const there = sides[other].values.get(token);
      if (there === undefined) expect(value - sides[mine].cutoff).toBeLessThan(tolerance);
      else expect(Math.abs(value - there)).toBeLessThan(tolerance);
    }
  }
}

function expectSameLogprobs(streamed: TokenLogprob[], whole: TokenLogprob[]): void {
  expect(streamed.map((l) => [l.token, l.bytes])).toEqual(whole.map((l) => [l.token, l.bytes]));
  for (let i = 0; i < whole.length; i++) {
    expect(streamed[i].logprob).toBeCloseTo(whole[i].logprob, 2);
    expectSameTop(streamed[i].top_logprobs, whole[i].top_logprobs, 0.05);
  }
}

needs(defaultTestModel()).describe('a streaming client that reads slowly', () => {
  let serving: Serving;
  beforeAll(async () => {
    // A float32 cache: a paused request recomputes its KV on resume, and with the GGUF's default
    // float16 cache that moved a chosen token's logprob by 8.7e-3 in one run (float16 rounding
    // lands differently on the recomputed path), enough to swap near-ties.
    serving = await startServing(['--max-logprobs', '50', '--kv-cache-dtype', 'float32']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => serving?.server.stop());

  it('gets fewer, larger chunks that add up to the non-streaming response', async () => {
    const whole = await serving.post('/v1/chat/completions', BODY);
    expect(whole.status).toBe(200);

    const finishedBefore = await serving.metric('vllm:request_success_total');
    const res = await unreadStream(serving.server.baseUrl, { ...BODY, stream: true, stream_options: { include_usage: true } });
    // The client reads nothing until the engine has set the request aside (its outputs queued
    // up to the backlog mark), and the request has not finished.
    await waitFor(
      async () => (await serving.metric('vllm:num_requests_running')) === 0 && (await serving.metric('vllm:num_requests_waiting')) === 0,
      30_000,
      'the unread stream paused',
    );
    expect(await serving.metric('vllm:request_success_total')).toBe(finishedBefore);
    const frames = sseFrames(await readAll(res));

    const choices: Choice[] = Array.from({ length: N }, () => ({ content: '', tokenIds: [], logprobs: [], finishReason: null }));
    const chunksWithTokens = new Array<number>(N).fill(0);
    for (const frame of frames) {
      for (const c of frame.choices) {
        const choice = choices[c.index];
        choice.content += c.delta.content ?? '';
        if (c.token_ids?.length) {
          choice.tokenIds.push(...c.token_ids);
          chunksWithTokens[c.index]++;
        }
        choice.logprobs.push(...(c.logprobs?.content ?? []));
        if (c.finish_reason) choice.finishReason = c.finish_reason;
      }
    }
    for (const c of whole.json.choices) {
      const streamed = choices[c.index];
      expect(streamed.tokenIds).toEqual(c.token_ids);
      expect(streamed.tokenIds).toHaveLength(MAX_TOKENS);
      expect(streamed.content).toBe(c.message.content);
      expect(streamed.finishReason).toBe(c.finish_reason);
      expectSameLogprobs(streamed.logprobs, c.logprobs.content);
      // The outputs queued while the client did not read came as one chunk, not one per token.
      expect(chunksWithTokens[c.index]).toBeLessThan(MAX_TOKENS);
    }
    expect(frames[frames.length - 1].usage).toEqual(whole.json.usage);
  }, 120_000);
});
