// /v1/responses on a real Redis that misbehaves: paused (SIGSTOP) and killed during requests and
// streams. Stored-response requests fail fast with 503 + Retry-After, a stream ends with
// response.failed, /health stays fast, the gauge tells, and everything works again once Redis returns.
// Also the bounds on previous_response_id chains.

import { SERVER_START_TIMEOUT_MS, defaultTestModel, expectApiError, type JsonReply, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';
import { REDIS_SERVER, startRedis } from '../helpers/redis-server';
import { startRedisServing, stopRedisServing, type RedisServing } from './redis-serving';
import { waitFor } from '../helpers/wait';

const STORE_TIMEOUT_S = 0.5;
const MAX_CHAIN_DEPTH = 3;
const MAX_CHAIN_BYTES = 64 * 1024;
const HEALTH_LIMIT_MS = 200;

needs(defaultTestModel(), REDIS_SERVER).describe('/v1/responses when Redis stalls or dies', () => {
  let setup: RedisServing;
  let s: Serving;

  beforeAll(async () => {
    setup = await startRedisServing([
      '--max-model-len', '2048',
      '--responses-store-timeout', String(STORE_TIMEOUT_S),
      '--responses-chain-max-depth', String(MAX_CHAIN_DEPTH),
      '--responses-chain-max-size', String(MAX_CHAIN_BYTES),
    ]);
    s = setup.s;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => stopRedisServing(setup));

  const body = (extra: Record<string, unknown> = {}) => ({ model: s.model, input: 'Tell me a story.', max_output_tokens: 8, temperature: 0, ...extra });
  const create = (extra: Record<string, unknown> = {}): Promise<any> => (s.client.responses.create as any)(body(extra));
  const storeUp = () => s.metric('ortllm_responses_store_up', 'backend="redis"');
  const call = async (method: string, path: string): Promise<JsonReply> => {
    const res = await fetch(`${s.server.baseUrl}${path}`, { method });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text), text, headers: res.headers };
  };
  const expectUnavailable = (reply: JsonReply): void => {
    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(reply.json.error).toMatchObject({ type: 'ServiceUnavailableError', code: 503 });
  };
  /** Redis answers again: a lookup of an unknown id is a 404, not a 503. */
  const storeAnswers = async () => (await call('GET', '/v1/responses/resp_probe')).status === 404;

  it('paused: a stored create answers 503 with Retry-After within the timeout, unstored requests go on, all recovers on SIGCONT', async () => {
    const before = await create();
    setup.redis.signal('SIGSTOP');
    try {
      const started = performance.now();
      const { result, report } = await setup.probe.during(s.post('/v1/responses', body()));
      const waited = performance.now() - started;
      expectUnavailable(result);
      expect(waited).toBeLessThan(STORE_TIMEOUT_S * 1000 + 1500);
      expect(report.max).toBeLessThan(HEALTH_LIMIT_MS);
      expectUnavailable(await call('GET', `/v1/responses/${before.id}`));
      expect(await storeUp()).toBe(0);
      expect((await create({ store: false })).status).not.toBe('failed');
    } finally {
      setup.redis.signal('SIGCONT');
    }
    expect((await s.client.responses.retrieve(before.id)).id).toBe(before.id);
    const after = await create({ previous_response_id: before.id });
    expect(after.status).not.toBe('failed');
    expect(await storeUp()).toBe(1);
  });

  /** Streams `extra` (a long run), SIGKILLs Redis at the first event; the events, with /health probed throughout. */
  const streamWhileRedisDies = async (extra: Record<string, unknown>): Promise<any[]> => {
    const stream = await (s.client.responses.create as any)(body({ stream: true, max_output_tokens: 1500, ignore_eos: true, ...extra }));
    const events: any[] = [];
    const { report } = await setup.probe.during(
      (async () => {
        for await (const event of stream) {
          if (events.length === 0) await setup.redis.kill();
          events.push(event);
        }
      })(),
    );
    expect(report.max).toBeLessThan(HEALTH_LIMIT_MS);
    return events;
  };
  const expectFailedByStore = (events: any[]): void => {
    const last = events[events.length - 1];
    expect(last.type).toBe('response.failed');
    expect(last.sequence_number).toBe(events[events.length - 2].sequence_number + 1);
    expect(last.response.status).toBe('failed');
    expect(last.response.error).toEqual({ code: 'server_error', message: expect.stringMatching(/responses store is unavailable/) });
    // The output made before the store failed still reaches the client.
    expect(last.response.output[0].content[0].text.length).toBeGreaterThan(0);
  };
  const restartRedis = async (): Promise<void> => {
    setup.redis = await startRedis(setup.redis.port);
    await waitFor(storeAnswers, 15_000, 'the store to answer again');
  };

  it('killed mid-stream: the stream ends with response.failed, create/retrieve/cancel answer 503, all recovers once Redis is back', async () => {
    const kept = await create();
    expectFailedByStore(await streamWhileRedisDies({}));

    expectUnavailable(await s.post('/v1/responses', body()));
    expectUnavailable(await call('GET', `/v1/responses/${kept.id}`));
    expectUnavailable(await call('POST', `/v1/responses/${kept.id}/cancel`));
    expectUnavailable(await call('DELETE', `/v1/responses/${kept.id}`));
    expect(await storeUp()).toBe(0);
    expect((await create({ store: false })).status).not.toBe('failed');

    await restartRedis();
    const next = await create();
    expect((await s.client.responses.retrieve(next.id)).id).toBe(next.id);
    expect(await storeUp()).toBe(1);
  }, 60_000);

  it('killed during a followed background run: its stream ends with response.failed too', async () => {
    expectFailedByStore(await streamWhileRedisDies({ background: true }));
    await restartRedis();
    expect((await create()).status).not.toBe('failed');
  }, 60_000);

  it(`refuses a previous_response_id chain longer than ${MAX_CHAIN_DEPTH} with a 400, and stays responsive`, async () => {
    await waitFor(storeAnswers, 15_000, 'the store to answer');
    let previous = await create();
    for (let depth = 2; depth <= MAX_CHAIN_DEPTH; depth++) previous = await create({ input: 'And then?', previous_response_id: previous.id });
    const err = await expectApiError(create({ input: 'And then?', previous_response_id: previous.id }), 400, 'previous_response_id');
    expect(err.message).toMatch(/--responses-chain-max-depth/);
    // A new chain starts fine.
    expect((await create({ previous_response_id: (await create()).id })).status).not.toBe('failed');
  });

  it(`refuses to continue a stored conversation over ${MAX_CHAIN_BYTES} bytes with a 400`, async () => {
    const big = await create({ input: 'word '.repeat(MAX_CHAIN_BYTES / 5 + 100), truncation: 'auto' });
    const err = await expectApiError(create({ input: 'And then?', previous_response_id: big.id }), 400, 'previous_response_id');
    expect(err.message).toMatch(/--responses-chain-max-size/);
    expect((await create()).status).not.toBe('failed');
  });
});
