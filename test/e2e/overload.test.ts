// Overload admission on real servers: a request is admitted whole or refused whole under
// --max-num-queued-reqs, so a burst admits the requests that fit (9 x 500 prompts against the
// 4,096 default: 8 complete, 1 gets 503 with Retry-After), and the pooling routes follow the same
// rules: more inputs than the bound is a 400 naming the field, a busy server a 503 with
// Retry-After. /health stays responsive throughout and the next request succeeds.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { writeEncoderDir } from '../helpers/encoder-model';
import { HealthProbe } from '../helpers/health-probe';
import { whileResponsive } from '../helpers/responsive';
import { needs } from '../helpers/needs';
import { startServer, type TestServer } from '../helpers/server';
import { defaultTestModel, expectApiError, postJson, SERVER_START_TIMEOUT_MS, startServing, type JsonReply, type Serving } from './completions-helpers';

function expectOverloaded(reply: JsonReply): void {
  expect(reply.status).toBe(503);
  expect(reply.headers.get('retry-after')).toBe('1');
  expect(reply.json.error).toMatchObject({ code: 503, message: expect.stringContaining('overloaded') });
}

needs(defaultTestModel()).describe('overload: generation (stories260K, --max-num-queued-reqs 4096)', () => {
  let serving: Serving;
  let probe: HealthProbe;
  beforeAll(async () => {
    serving = await startServing();
    probe = new HealthProbe(serving.server.baseUrl);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    probe?.close();
    await serving?.server.stop();
  });

  it('a burst of 9 requests of 500 prompts admits the 8 that fit, refuses the 9th whole with 503 + Retry-After', async () => {
    const prompts = Array.from({ length: 500 }, (_, i) => [1, 100 + (i % 300), 200 + (i % 7)]);
    const body = { model: serving.model, prompt: prompts, max_tokens: 8, ignore_eos: true, temperature: 0 };
    const replies = await whileResponsive(probe, () => Promise.all(Array.from({ length: 9 }, () => serving.post('/v1/completions', body))));
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    expect([ok.length, refused.length]).toEqual([8, 1]);
    for (const r of ok) expect(r.json.choices).toHaveLength(500);
    expectOverloaded(refused[0]);
    // Nothing of the refused request stayed behind, and the next request is served.
    expect(await serving.metric('vllm:num_requests_running')).toBe(0);
    expect(await serving.metric('vllm:num_requests_waiting')).toBe(0);
    const next = await serving.client.completions.create({ model: serving.model, prompt: 'Once upon a time', max_tokens: 5 });
    expect(next.choices[0].text.length).toBeGreaterThan(0);
  }, 120_000);

  it('a request needing more sequences than the bound is a 400 naming its field', async () => {
    const prompts = Array.from({ length: 4097 }, () => [1, 2]);
    await expectApiError(serving.client.completions.create({ model: serving.model, prompt: prompts, max_tokens: 1 }), 400, 'prompt');
    await expectApiError(serving.client.completions.create({ model: serving.model, prompt: 'Hi', max_tokens: 1, n: 4097 } as never), 400, 'n');
  });
});

describe('overload: pooling (a random MiniLM, --max-num-queued-reqs 256)', () => {
  let tmp: string;
  let server: TestServer;
  let client: OpenAI;
  let probe: HealthProbe;
  const BOUND = 256;
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-overload-'));
    const embedder = writeEncoderDir(join(tmp, 'minilm'), { family: 'bert', numLabels: null, hidden: 32, layers: 2, heads: 4, intermediate: 64, maxPositions: 64 }, 41, {
      pooling: 'mean',
      normalize: true,
    });
    server = await startServer(['--served-model-name', 'minilm', '--max-num-queued-reqs', String(BOUND)], { model: embedder.dir });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
    probe = new HealthProbe(server.baseUrl);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    probe?.close();
    await server?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('more inputs than the bound can never fit: 400 with param, the server unharmed', async () => {
    const result = await whileResponsive(probe, () =>
      Promise.all([
        expectApiError(client.embeddings.create({ model: 'minilm', input: Array.from({ length: BOUND + 1 }, (_, i) => `text ${i}`) }), 400, 'input'),
        postJson(server.baseUrl, '/pooling', { model: 'minilm', input: Array.from({ length: BOUND + 1 }, () => [101, 102]) }),
      ]),
    );
    const [embeddings, pooling] = result;
    expect(embeddings.message).toContain('--max-num-queued-reqs');
    expect([pooling.status, pooling.json.error.param, pooling.headers.get('retry-after')]).toEqual([400, 'input', null]);
    const next = await client.embeddings.create({ model: 'minilm', input: ['hello world'] });
    expect(next.data).toHaveLength(1);
  });

  it('a busy server answers 503 with Retry-After; the requests that fit complete', async () => {
    // 8 concurrent requests of 200 long inputs against a bound of 256: one fits at a time.
    const input = Array.from({ length: 200 }, (_, i) => `${'word '.repeat(12)}${i}`);
    const replies = await whileResponsive(probe, () =>
      Promise.all(Array.from({ length: 8 }, () => postJson(server.baseUrl, '/v1/embeddings', { model: 'minilm', input }))),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    const refused = replies.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expectOverloaded(r);
    for (const r of replies.filter((x) => x.status === 200)) expect(r.json.data).toHaveLength(200);
    const next = await client.embeddings.create({ model: 'minilm', input });
    expect(next.data).toHaveLength(200);
  });
});
