// What happens to a request before any route code runs, on the real app factory (Fastify
// adapter, in-process, scripted engine): the API key before the body is read, 405/404 under
// guarded prefixes, JSON-only bodies, the body shape limits, the envelope on every framework
// error (bad URL, 408, 413, 415, 431, malformed HTTP), the docs file list, and the drain's 503.

import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../../src/app-factory';
import { drainOf } from '../../../src/common/drain';
import { resolveServerConfig, ServerConfig } from '../../../src/config/server-config';
import { FakeEngine } from '../../helpers/fake-engine';

async function build(overrides: Partial<ServerConfig> = {}) {
  const config = resolveServerConfig(
    { model: '/models/tiny.gguf', disableUvicornAccessLog: true, logLevel: 'error', apiKeys: ['k1'], enableScaleOut: true, ...overrides },
    {},
  );
  const app = await createApp(config, { engine: new FakeEngine({ maxModelLen: 64 }) });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  return { app, fastify };
}

const KEY = { authorization: 'Bearer k1' };
const JSON_KEY = { ...KEY, 'content-type': 'application/json' };

/** The vLLM envelope of a framework-level error with this status. */
function envelope(status: number) {
  return { error: { message: expect.any(String), type: expect.any(String), param: null, code: status } };
}

/** Writes raw bytes to the server and returns what it answers before closing. */
function rawExchange(port: number, chunks: Array<string | Buffer>, intervalMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(answer) : reject(err)));
    let i = 0;
    const next = (): void => {
      if (i >= chunks.length || socket.destroyed) return;
      socket.write(chunks[i++]);
      if (intervalMs > 0) setTimeout(next, intervalMs);
      else next();
    };
    socket.on('connect', next);
  });
}

function bodyOf(rawAnswer: string): unknown {
  return JSON.parse(rawAnswer.slice(rawAnswer.indexOf('\r\n\r\n') + 4));
}

describe('the HTTP edge', () => {
  let app: NestFastifyApplication;
  let fastify: FastifyInstance;

  beforeAll(async () => {
    ({ app, fastify } = await build({ maxJsonDepth: 8, maxJsonObjectKeys: 50, maxJsonArrayLength: 100, maxJsonStringLength: 1000, maxRequestBodyBytes: 64 * 1024 }));
  });
  afterAll(async () => app.close());

  it('answers 401 before reading the body: a body it would refuse, even a malformed one, is never parsed', async () => {
    for (const payload of ['{"prompt":', '{"a":'.repeat(1000), JSON.stringify({ prompt: 'x'.repeat(200_000) })]) {
      const res = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload });
      expect(res.statusCode).toBe(401);
      expect(res.body).toBe('{"error":"Unauthorized"}');
      expect(res.headers.connection).toBe('close');
    }
  });

  it('answers unknown paths under the guarded prefixes 401 without the key, 404 with it; other unknown paths 404', async () => {
    for (const url of ['/v1/nope', '/v1', '/inference/v1/nope', '/v2/x', '/cohere/x']) {
      expect((await fastify.inject({ method: 'GET', url })).statusCode).toBe(401);
      const known = await fastify.inject({ method: 'GET', url, headers: KEY });
      expect([url, known.statusCode]).toEqual([url, 404]);
      expect(known.json()).toEqual(envelope(404));
    }
    const other = await fastify.inject({ method: 'GET', url: '/nope' });
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual(envelope(404));
  });

  it('answers a known path called with another method 405 with Allow, in the envelope', async () => {
    const res = await fastify.inject({ method: 'DELETE', url: '/v1/models', headers: KEY });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toContain('GET');
    expect(res.json()).toEqual({ error: { message: 'Method Not Allowed', type: 'Method Not Allowed', param: null, code: 405 } });
    expect((await fastify.inject({ method: 'GET', url: '/v1/completions', headers: KEY })).statusCode).toBe(405);
  });

  it('takes JSON bodies only: forms, text and untyped bodies get 415 in the envelope', async () => {
    const cases: Array<Record<string, string>> = [
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'text/plain' },
      { 'content-type': 'multipart/form-data; boundary=x' },
      {},
    ];
    for (const headers of cases) {
      const res = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: { ...KEY, ...headers }, payload: 'prompt=hi&max_tokens=2' });
      expect([headers, res.statusCode]).toEqual([headers, 415]);
      expect(res.json()).toEqual(envelope(415));
      expect(res.json().error.message).toMatch(/application\/json/);
    }
    const structured = await fastify.inject({ method: 'POST', url: '/ping', headers: { 'content-type': 'application/vnd.api+json' }, payload: '{}' });
    expect(structured.statusCode).toBe(200);
  });

  it('refuses bodies past each shape limit with 400 naming the flag, before validation', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{"prompt":"hi","metadata":' + '['.repeat(9) + ']'.repeat(9) + '}', /--max-json-depth/],
      [JSON.stringify({ prompt: 'hi', logit_bias: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [String(i), 1])) }), /--max-json-object-keys/],
      [JSON.stringify({ prompt: Array.from({ length: 101 }, () => 1) }), /--max-json-array-length/],
      [JSON.stringify({ prompt: 'x'.repeat(1001) }), /--max-json-string-length/],
    ];
    for (const [payload, message] of cases) {
      const res = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: JSON_KEY, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: { message: expect.stringMatching(message), type: 'Bad Request', param: 'body', code: 400 } });
    }
  });

  it('refuses invalid UTF-8, prototype keys and a missing body with 400', async () => {
    const invalidUtf8 = Buffer.concat([Buffer.from('{"prompt":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const bad = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: JSON_KEY, payload: invalidUtf8 });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toMatch(/UTF-8/);
    const proto = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: JSON_KEY, payload: '{"prompt":"hi","__proto__":{"x":1}}' });
    expect(proto.statusCode).toBe(400);
    expect(proto.json().error.message).toMatch(/__proto__/);
    const empty = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: JSON_KEY, payload: '' });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toMatchObject({ type: 'Bad Request', param: 'body' });
    const list = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: JSON_KEY, payload: '[1,2]' });
    expect(list.statusCode).toBe(400);
    expect(list.json().error).toMatchObject({ type: 'Bad Request', param: 'body' });
  });

  it('answers a body over --max-request-body-size 413 in the envelope, by Content-Length or as it streams in', async () => {
    const big = JSON.stringify({ prompt: ['x'.repeat(900)].concat(Array.from({ length: 99 }, () => 'y'.repeat(900))) });
    const res = await fastify.inject({ method: 'POST', url: '/v1/completions', headers: JSON_KEY, payload: big });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual(envelope(413));
    expect(res.headers.connection).toBe('close');
  });

  it('validates a nested DTO: derender of {} is a 400 naming the missing field, not a 500', async () => {
    for (const url of ['/v1/chat/completions/derender', '/v1/completions/derender']) {
      const res = await fastify.inject({ method: 'POST', url, headers: JSON_KEY, payload: '{}' });
      expect([url, res.statusCode]).toEqual([url, 400]);
      expect(res.json().error.type).toBe('Bad Request');
      expect(res.json().error.param).toMatch(/^generate_response/);
    }
  });

  it('serves only the files Swagger UI loads under /docs', async () => {
    expect((await fastify.inject({ method: 'GET', url: '/docs' })).statusCode).toBe(200);
    expect((await fastify.inject({ method: 'GET', url: '/docs/swagger-ui-bundle.js' })).statusCode).toBe(200);
    expect((await fastify.inject({ method: 'GET', url: '/docs/swagger-ui-init.js' })).statusCode).toBe(200);
    for (const file of ['package.json', 'README.md', 'swagger-ui.js.map', 'index.html', 'absolute-path.js']) {
      const res = await fastify.inject({ method: 'GET', url: `/docs/${file}` });
      expect([file, res.statusCode]).toEqual([file, 404]);
      expect(res.json()).toEqual(envelope(404));
    }
  });

  it('answers framework-level errors on a real socket in the envelope: bad URL, 431, malformed HTTP', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.getHttpServer().address() as AddressInfo;
    const badUrl = await rawExchange(port, ['GET /v1/%E0%A4%A HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\nConnection: close\r\n\r\n']);
    expect(badUrl).toMatch(/^HTTP\/1.1 400/);
    expect(bodyOf(badUrl)).toEqual(envelope(400));
    const hugeHeader = await rawExchange(port, [`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${'a'.repeat(60_000)}\r\n\r\n`]);
    expect(hugeHeader).toMatch(/^HTTP\/1.1 431/);
    expect(bodyOf(hugeHeader)).toEqual(envelope(431));
    const garbage = await rawExchange(port, ['NOT HTTP AT ALL\r\n\r\n']);
    expect(garbage).toMatch(/^HTTP\/1.1 400/);
    expect(bodyOf(garbage)).toEqual(envelope(400));
  });

  it('answers a body that came with its headers (read at once) as one that streams in', async () => {
    if (!app.getHttpServer().listening) await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.getHttpServer().address() as AddressInfo;
    const head = (length: number, path = '/v1/completions') =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;
    const bodies: Array<[Buffer, number, string?]> = [
      [Buffer.from('{"a":[1,{"b":"c"}]}'), 200, '/ping'],
      [Buffer.from('{"prompt":"hi","metadata":' + '['.repeat(9) + ']'.repeat(9) + '}'), 400],
      [Buffer.concat([Buffer.from('{"prompt":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]), 400],
      [Buffer.from('{"prompt":"hi","__proto__":{"x":1}}'), 400],
      [Buffer.from('{"prompt":"hi",'), 400],
      [Buffer.alloc(0), 400],
    ];
    for (const [body, status, path] of bodies) {
      const whole = await rawExchange(port, [Buffer.concat([Buffer.from(head(body.length, path)), body])]);
      const pieces = await rawExchange(port, [head(body.length, path), body.subarray(0, 5), body.subarray(5)], 20);
      expect(whole).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(pieces).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      if (status !== 200) expect(bodyOf(whole)).toEqual(bodyOf(pieces));
    }
  });
});

describe('the HTTP edge, timing and shutdown', () => {
  it('answers a body that does not arrive within --body-read-timeout 408 in the envelope', async () => {
    const { app } = await build({ bodyReadTimeoutSeconds: 0.5 });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.getHttpServer().address() as AddressInfo;
      const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
      // One byte every 200 ms: the whole body would take 20 s.
      const answer = await rawExchange(port, [head, ...'{"prompt":"slow'.split('')], 200);
      expect(answer).toMatch(/^HTTP\/1.1 408/);
      expect(bodyOf(answer)).toEqual(envelope(408));
    } finally {
      await app.close();
    }
  });

  it('answers every new request 503 with Retry-After and Connection: close once draining', async () => {
    const { app, fastify } = await build();
    try {
      expect((await fastify.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
      drainOf(fastify).start();
      for (const url of ['/health', '/v1/models']) {
        const res = await fastify.inject({ method: 'GET', url, headers: KEY });
        expect(res.statusCode).toBe(503);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.headers.connection).toBe('close');
        expect(res.json()).toEqual(envelope(503));
      }
    } finally {
      await app.close();
    }
  });
});
