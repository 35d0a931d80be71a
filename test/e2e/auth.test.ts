// API-key auth on the real server: every route class with no key, a wrong key and each valid
// key; the open routes (/health, /ping, /docs + assets, /openapi.json, legacy POST
// /abort_requests) without one; an embedding server's pooling routes. 401 bodies are exactly
// vLLM's {"error":"Unauthorized"}.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeEncoderDir } from '../helpers/encoder-model';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';

const KEYS = ['e2e-key-one', 'e2e-key-two'];
const model = defaultTestModel();
const onModel = needs(model);

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
}

function send(server: TestServer, call: Call, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${server.baseUrl}${call.path}`, {
    method: call.method,
    headers,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
  });
}

async function expectUnauthorized(res: Response): Promise<void> {
  expect(res.status).toBe(401);
  expect(await res.text()).toBe('{"error":"Unauthorized"}');
}

const GUARDED: Call[] = [
  { method: 'GET', path: '/v1/models' },
  { method: 'GET', path: '/version' },
  { method: 'GET', path: '/metrics' },
  { method: 'POST', path: '/v1/completions', body: { prompt: 'Once', max_tokens: 2 } },
  { method: 'POST', path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 } },
  // vLLM leaves these two open; our guard covers everything but the probes, docs and legacy abort.
  { method: 'POST', path: '/tokenize', body: { prompt: 'Once' } },
  { method: 'POST', path: '/detokenize', body: { tokens: [1, 2] } },
];

const OPEN: Call[] = [
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/ping' },
  { method: 'POST', path: '/ping' },
  { method: 'GET', path: '/docs' },
  { method: 'GET', path: '/docs/swagger-ui-bundle.js' },
  { method: 'GET', path: '/docs/swagger-ui-init.js' },
  { method: 'GET', path: '/openapi.json' },
];

onModel.describe('auth on a server with two --api-key values', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(['--api-key', KEYS[0], '--api-key', KEYS[1]]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it.each(GUARDED.map((c) => [`${c.method} ${c.path}`, c] as const))('%s needs a key', async (_name, call) => {
    await expectUnauthorized(await send(server, call));
    await expectUnauthorized(await send(server, call, 'Bearer wrong-key'));
    await expectUnauthorized(await send(server, call, KEYS[0])); // no scheme
    await expectUnauthorized(await send(server, call, `Basic ${KEYS[0]}`));
    for (const authorization of [`Bearer ${KEYS[0]}`, `bearer ${KEYS[1]}`, `BEARER ${KEYS[0]}`]) {
      const res = await send(server, call, authorization);
      expect(res.status).not.toBe(401);
      expect(res.status).toBeLessThan(500);
    }
  });

  it('answers the guarded always-registered routes with 200 given a key', async () => {
    for (const path of ['/v1/models', '/version', '/metrics']) {
      expect((await send(server, { method: 'GET', path }, `Bearer ${KEYS[1]}`)).status).toBe(200);
    }
  });

  it.each(OPEN.map((c) => [`${c.method} ${c.path}`, c] as const))('%s is open without a key', async (_name, call) => {
    const res = await send(server, call);
    expect(res.status).toBe(200);
  });
});

onModel.describe('auth on a --tokens-only server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(['--tokens-only', '--api-key', KEYS[0]]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it('leaves the legacy POST /abort_requests open', async () => {
    const res = await send(server, { method: 'POST', path: '/abort_requests', body: { request_ids: ['generate-tokens-none'] } });
    expect(res.status).toBe(200);
  });

  it('guards /inference/v1/abort_requests and /inference/v1/generate', async () => {
    const abort: Call = { method: 'POST', path: '/inference/v1/abort_requests', body: { request_ids: ['generate-tokens-none'] } };
    await expectUnauthorized(await send(server, abort));
    expect((await send(server, abort, `Bearer ${KEYS[0]}`)).status).toBe(200);
    const generate: Call = { method: 'POST', path: '/inference/v1/generate', body: { token_ids: [1, 2], sampling_params: { max_tokens: 2 } } };
    await expectUnauthorized(await send(server, generate));
    expect((await send(server, generate, `Bearer ${KEYS[0]}`)).status).toBe(200);
  });
});

onModel.describe('auth from VLLM_API_KEY', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer([], { env: { VLLM_API_KEY: 'from-env' } });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it('guards with the environment key when no --api-key is given', async () => {
    const call: Call = { method: 'GET', path: '/v1/models' };
    await expectUnauthorized(await send(server, call));
    expect((await send(server, call, 'Bearer from-env')).status).toBe(200);
    expect((await send(server, { method: 'GET', path: '/health' })).status).toBe(200);
  });
});

// vLLM's middleware checks only paths under /v1 (/v1/embeddings, /v1/score, /v1/rerank); the guard
// here also covers the unversioned pooling routes, which cost as much model time.
describe('auth on an embedding server (random BERT)', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-auth-embed-'));
    const encoder = writeEncoderDir(join(dir, 'bert'), { family: 'bert', numLabels: null, hidden: 32, layers: 1, heads: 4, intermediate: 64, maxPositions: 64 }, 7, { pooling: 'mean', normalize: true });
    server = await startServer(['--api-key', KEYS[0]], { model: encoder.dir });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const POOLING: Call[] = [
    { method: 'POST', path: '/v1/embeddings', body: { input: 'hello world' } },
    { method: 'POST', path: '/pooling', body: { input: 'hello world' } },
    ...['/score', '/v1/score'].map((path): Call => ({ method: 'POST', path, body: { text_1: 'hello', text_2: 'world' } })),
    ...['/rerank', '/v1/rerank', '/v2/rerank'].map((path): Call => ({ method: 'POST', path, body: { query: 'hello', documents: ['world'] } })),
    { method: 'POST', path: '/invocations', body: { input: 'hello world' } },
  ];

  it.each(POOLING.map((c) => [c.path, c] as const))('%s needs a key, and answers 200 with one', async (_name, call) => {
    await expectUnauthorized(await send(server, call));
    await expectUnauthorized(await send(server, call, 'Bearer wrong-key'));
    expect((await send(server, call, `Bearer ${KEYS[0]}`)).status).toBe(200);
  });
});
