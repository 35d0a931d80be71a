// What the server gives away to whoever asks: no credentials in /server_info or the logs, no
// forwarded headers from untrusted peers (or with a non-http scheme) in the served OpenAPI
// `servers`, no route existence without the key (405 only after it), OPTIONS answered in the
// JSON envelope, and vLLM's top_k / logit_bias ranges. Each case ends with a normal request.

import { request as httpRequest } from 'node:http';
import { SERVER_START_TIMEOUT_MS, defaultTestModel, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';
import { REDIS_SERVER } from '../helpers/redis-server';
import { startRedisServing, stopRedisServing, type RedisServing } from './redis-serving';

// startServing's openai client sends this key.
const API_KEY = 'unused';
const REDIS_PASSWORD = 'pw-9f2c4e71-never-printed';
const AUTH = { authorization: `Bearer ${API_KEY}` };

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with any headers (Host included), which fetch would not send. */
function raw(baseUrl: string, method: string, path: string, headers: Record<string, string> = {}): Promise<RawReply> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

needs(defaultTestModel(), REDIS_SERVER).describe('what the edge gives away', () => {
  let setup: RedisServing;
  let s: Serving;

  beforeAll(async () => {
    // Only 10.9.8.7 may forward: the tests' own 127.0.0.1 is an untrusted peer here.
    setup = await startRedisServing(['--api-key', API_KEY, '--forwarded-allow-ips', '10.9.8.7'], { env: { VLLM_SERVER_DEV_MODE: '1' } }, REDIS_PASSWORD);
    s = setup.s;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => stopRedisServing(setup));

  const completion = (extra: Record<string, unknown> = {}) => s.post('/v1/completions', { model: s.model, prompt: 'Once upon', max_tokens: 4, temperature: 0, ...extra }, AUTH);
  const expectServing = async (): Promise<void> => {
    const { result, report } = await setup.probe.during(completion());
    expect(result.status).toBe(200);
    expect(report.max).toBeLessThan(200);
  };

  it('/server_info and the logs show the store URL without its password', async () => {
    for (const format of ['text', 'json']) {
      const res = await raw(s.server.baseUrl, 'GET', `/server_info?config_format=${format}`, AUTH);
      expect(res.status).toBe(200);
      expect(res.body).not.toContain(REDIS_PASSWORD);
      expect(res.body).not.toContain(API_KEY);
      expect(res.body).toContain(`redis://default:***@127.0.0.1:${setup.redis.port}/0`);
    }
    expect(s.server.output()).not.toContain(REDIS_PASSWORD);
    await expectServing();
  });

  it('the served spec names the server from the Host header, never from an untrusted peer\'s X-Forwarded-*', async () => {
    const spec = async (headers: Record<string, string>) => JSON.parse((await raw(s.server.baseUrl, 'GET', '/openapi.json', headers)).body).servers;
    const hostHeader = new URL(s.server.baseUrl).host;
    expect(await spec({ 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'javascript' })).toEqual([{ url: `http://${hostHeader}` }]);
    // A Host that is no host name falls back to the default rather than being reflected.
    expect(await spec({ host: 'x"><script>alert(1)</script>' })).toEqual([{ url: 'http://localhost:8000' }]);
    await expectServing();
  });

  it('answers 401 before 405: a guarded route called with another method, or spelled with %-escapes, needs the key', async () => {
    for (const [method, path] of [['POST', '/metrics'], ['GET', '/%76%31/completions'], ['DELETE', '/v1/completions']]) {
      const res = await raw(s.server.baseUrl, method, path);
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 401, body: '{"error":"Unauthorized"}' });
    }
    const withKey = await raw(s.server.baseUrl, 'POST', '/metrics', AUTH);
    expect([withKey.status, withKey.headers.allow]).toEqual([405, 'GET, HEAD']);
    // Open routes stay open: the wrong method there is a 405 without a key.
    expect((await raw(s.server.baseUrl, 'POST', '/health')).status).toBe(405);
    await expectServing();
  });

  it('answers OPTIONS as a CORS preflight, or else in the JSON envelope', async () => {
    const preflight = await raw(s.server.baseUrl, 'OPTIONS', '/v1/completions', { origin: 'https://app.example', 'access-control-request-method': 'POST' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    const plain = await raw(s.server.baseUrl, 'OPTIONS', '/v1/completions');
    expect([plain.status, plain.headers['content-type'], plain.headers.allow]).toEqual([405, 'application/json', 'POST']);
    expect(JSON.parse(plain.body)).toEqual({ error: { message: 'Method Not Allowed', type: 'Method Not Allowed', param: null, code: 405 } });
    const unknown = await raw(s.server.baseUrl, 'OPTIONS', '/no/such/route', { origin: 'https://app.example' });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).error).toMatchObject({ code: 404 });
    expect(unknown.headers['access-control-allow-origin']).toBe('*');
    await expectServing();
  });

  it("keeps vLLM's ranges: top_k -5 is a 400, logit_bias 1e300 is clamped to 100", async () => {
    // Greedy (temperature 0) included: the range is checked before greedy sampling drops the filter.
    for (const temperature of [0, 0.8]) {
      const topK = await completion({ top_k: -5, temperature });
      expect([topK.status, topK.json.error.param, topK.json.error.message]).toEqual([400, 'top_k', 'top_k must be 0 (disable), or at least 1, got -5.']);
    }
    const biased = await completion({ logit_bias: { '5': 1e300 }, return_token_ids: true });
    expect(biased.status).toBe(200);
    expect(biased.json.choices[0].token_ids).toEqual([5, 5, 5, 5]);
    await expectServing();
  });
});
