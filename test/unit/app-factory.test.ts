// The always-registered routes and cross-cutting behaviour on the real app factory (Fastify adapter),
// in-process, with a scripted engine: auth per route class, error envelopes, request ids, CORS,
// health, models, metrics, docs.

import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../src/app-factory';
import { resolveServerConfig, ServerConfig } from '../../src/config/server-config';
import { FakeEngine } from '../helpers/fake-engine';

/** The scheduler state /metrics reports in these tests. */
const STATS = { numRunning: 1, numWaiting: 2, kvCacheUsage: 0.25, numBlocks: 64, blockSize: 16 };

async function build(overrides: Partial<ServerConfig>, engine = new FakeEngine({ maxModelLen: 512, stats: STATS })) {
  const config = resolveServerConfig({ model: '/models/tiny.gguf', disableUvicornAccessLog: true, logLevel: 'error', ...overrides }, {});
  const app = await createApp(config, { engine });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  return { app, fastify, engine, config };
}

describe('app factory (in-process)', () => {
  let app: NestFastifyApplication;
  let fastify: FastifyInstance;
  let engine: FakeEngine;

  beforeAll(async () => {
    ({ app, fastify, engine } = await build({ apiKeys: ['k1', 'k2'], servedModelNames: ['tiny', 'alias'], enableRequestIdHeaders: true }));
  });
  afterAll(async () => app.close());

  it('guards /v1/models, /version and /metrics with the key, 401 body exactly {"error":"Unauthorized"}', async () => {
    for (const url of ['/v1/models', '/version', '/metrics']) {
      const res = await fastify.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(401);
      expect(res.body).toBe('{"error":"Unauthorized"}');
      const wrong = await fastify.inject({ method: 'GET', url, headers: { authorization: 'Bearer nope' } });
      expect(wrong.statusCode).toBe(401);
    }
  });

  it('accepts every key, with a case-insensitive Bearer scheme', async () => {
    for (const header of ['Bearer k1', 'bearer k2', 'BEARER   k1']) {
      const res = await fastify.inject({ method: 'GET', url: '/v1/models', headers: { authorization: header } });
      expect(res.statusCode).toBe(200);
    }
    const noScheme = await fastify.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'k1' } });
    expect(noScheme.statusCode).toBe(401);
  });

  it('answers CORS preflights without a key', async () => {
    const res = await fastify.inject({
      method: 'OPTIONS',
      url: '/v1/completions',
      headers: { origin: 'https://ui.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toContain('POST');
    expect(res.headers['access-control-allow-headers']).toBe('authorization,content-type');
  });

  it('leaves /health, /ping, /docs and /openapi.json open', async () => {
    expect((await fastify.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect((await fastify.inject({ method: 'GET', url: '/ping' })).statusCode).toBe(200);
    expect((await fastify.inject({ method: 'POST', url: '/ping' })).statusCode).toBe(200);
    const docs = await fastify.inject({ method: 'GET', url: '/docs' });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).toContain('swagger-ui');
    const spec = await fastify.inject({ method: 'GET', url: '/openapi.json' });
    expect(spec.statusCode).toBe(200);
    expect(spec.json().components.securitySchemes.bearer).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
  });

  it('/health is 200 with an empty body, 503 when the engine is dead', async () => {
    const ok = await fastify.inject({ method: 'GET', url: '/health' });
    expect(ok.body).toBe('');
    engine.alive = false;
    try {
      expect((await fastify.inject({ method: 'GET', url: '/health' })).statusCode).toBe(503);
      expect((await fastify.inject({ method: 'GET', url: '/ping' })).statusCode).toBe(503);
    } finally {
      engine.alive = true;
    }
  });

  it('lists every served name in vLLM ModelList shape', async () => {
    const res = await fastify.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer k1' } });
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(['tiny', 'alias']);
    const card = body.data[0];
    expect(card).toMatchObject({ object: 'model', owned_by: 'vllm', root: '/models/tiny.gguf', parent: null, max_model_len: 512 });
    expect(card.permission[0]).toMatchObject({ object: 'model_permission', allow_sampling: true, organization: '*', group: null });
    expect(card.permission[0].id).toMatch(/^modelperm-[0-9a-f]{32}$/);
  });

  it('answers unknown routes with the 404 envelope', async () => {
    const res = await fastify.inject({ method: 'GET', url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { message: expect.any(String), type: 'Not Found', param: null, code: 404 } });
  });

  it('echoes X-Request-Id, or sends a fresh one', async () => {
    const echoed = await fastify.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'abc-123' } });
    expect(echoed.headers['x-request-id']).toBe('abc-123');
    const fresh = await fastify.inject({ method: 'GET', url: '/health' });
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
  });

  it('exposes vLLM metrics fed by the engine', async () => {
    engine.emit({
      promptTokens: 7,
      generationTokens: 3,
      timeToFirstTokens: [0.05],
      interTokenLatencies: [0.02, 0.03],
      finished: [
        {
          finishReason: 'stop',
          e2eLatency: 0.4,
          queueTime: 0.01,
          prefillTime: 0.05,
          decodeTime: 0.3,
          inferenceTime: 0.35,
          promptTokens: 7,
          generationTokens: 3,
          maxTokensParam: 16,
          n: 1,
          maxGenerationTokens: 3,
        },
      ],
      numPreemptions: 0,
      prefixCacheQueries: 7,
      prefixCacheHits: 0,
      promptTokensCached: 16,
      promptTokensRecomputed: 0,
      promptTokensBySource: { localCompute: 7, localCacheHit: 16, externalKvTransfer: 0 },
    });
    const res = await fastify.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer k1' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain; version=0.0.4');
    const text = res.body;
    expect(text).toContain('vllm:prompt_tokens_total{model_name="tiny",engine="0"} 7');
    expect(text).toContain('vllm:generation_tokens_total{model_name="tiny",engine="0"} 3');
    expect(text).toContain('vllm:request_success_total{model_name="tiny",engine="0",finished_reason="stop"} 1');
    expect(text).toContain('vllm:num_requests_running{model_name="tiny",engine="0"} 1');
    expect(text).toContain('vllm:num_requests_waiting{model_name="tiny",engine="0"} 2');
    expect(text).toContain('vllm:kv_cache_usage_perc{model_name="tiny",engine="0"} 0.25');
    expect(text).toContain('vllm:time_to_first_token_seconds_bucket{le="0.06",model_name="tiny",engine="0"} 1');
    expect(text).toContain('vllm:request_prompt_tokens_bucket{le="10",model_name="tiny",engine="0"} 1');
    expect(text).toMatch(/# TYPE vllm:e2e_request_latency_seconds histogram/);
    expect(text).toMatch(/http_requests_total\{method="GET",status="2xx",handler="\/v1\/models"\} \d+/);
    // The metrics vLLM added later, with its bucket lists and label sets.
    expect(text).toContain('vllm:prompt_tokens_cached_total{model_name="tiny",engine="0"} 16');
    expect(text).toContain('vllm:prompt_tokens_recomputed_total{model_name="tiny",engine="0"} 0');
    expect(text).toContain('vllm:prompt_tokens_by_source_total{model_name="tiny",engine="0",source="local_compute"} 7');
    expect(text).toContain('vllm:prompt_tokens_by_source_total{model_name="tiny",engine="0",source="external_kv_transfer"} 0');
    expect(text).toContain('vllm:request_max_num_generation_tokens_bucket{le="5",model_name="tiny",engine="0"} 1');
    expect(text).toContain('vllm:iteration_tokens_total_bucket{le="16",model_name="tiny",engine="0"} 1');
    expect(text).toContain('vllm:num_requests_waiting_by_reason{model_name="tiny",engine="0",reason="capacity"} 2');
    expect(text).toContain('vllm:num_requests_waiting_by_reason{model_name="tiny",engine="0",reason="deferred"} 0');
    expect(text).toContain('vllm:engine_sleep_state{model_name="tiny",engine="0",sleep_state="awake"} 1');
    expect(text).toContain('vllm:engine_sleep_state{model_name="tiny",engine="0",sleep_state="weights_offloaded"} 0');
    expect(text).toMatch(/vllm:cache_config_info\{engine="0",block_size="16",gpu_memory_utilization="None",swap_space="0",cache_dtype="auto",.*enable_prefix_caching="True".*num_gpu_blocks="64".*kv_offloading_backend="None"\} 1/);
    expect(text).toMatch(/http_request_size_bytes_count\{handler="\/v1\/models"\} \d+/);
    expect(text).toMatch(/http_response_size_bytes_sum\{handler="\/v1\/models"\} [1-9]\d*/);
  });

  it('answers an unexpected failure with a 500 envelope and no stack trace', async () => {
    const original = engine.stats.bind(engine);
    engine.stats = () => {
      throw new Error('secret internals at /srv/engine.ts:42');
    };
    try {
      const res = await fastify.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer k1' } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: { message: 'Internal server error', type: 'InternalServerError', param: null, code: 500 } });
    } finally {
      engine.stats = original;
    }
  });

  it('shuts the engine down once when the app closes', async () => {
    const own = await build({});
    await own.app.close();
    expect(own.engine.shutdownCalls).toBe(1);
  });
});

describe('app factory without --api-key', () => {
  it('opens every route and applies CORS', async () => {
    const { app, fastify } = await build({ allowedOrigins: ['https://a.example'] });
    try {
      const res = await fastify.inject({ method: 'GET', url: '/v1/models', headers: { origin: 'https://a.example' } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('https://a.example');
      const version = await fastify.inject({ method: 'GET', url: '/version' });
      expect(version.json()).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    } finally {
      await app.close();
    }
  });

  it('serves nothing under /docs with --disable-fastapi-docs', async () => {
    const { app, fastify } = await build({ disableFastapiDocs: true });
    try {
      expect((await fastify.inject({ method: 'GET', url: '/docs' })).statusCode).toBe(404);
      expect((await fastify.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });

  it('serves under --root-path with and without the prefix', async () => {
    const { app, fastify } = await build({ rootPath: '/llm' });
    try {
      expect((await fastify.inject({ method: 'GET', url: '/llm/v1/models' })).statusCode).toBe(200);
      expect((await fastify.inject({ method: 'GET', url: '/v1/models' })).statusCode).toBe(200);
      const spec = (await fastify.inject({ method: 'GET', url: '/llm/openapi.json' })).json();
      // The served spec names the host the client reached plus the root path.
      expect(spec.servers).toEqual([{ url: 'http://localhost:80/llm' }]);
      const proxied = await fastify.inject({
        method: 'GET',
        url: '/llm/openapi.json',
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.org' },
      });
      expect(proxied.json().servers).toEqual([{ url: 'https://api.example.org/llm' }]);
    } finally {
      await app.close();
    }
  });
});

describe('app factory body errors', () => {
  it('answers malformed JSON with 400 and a too-large body with 413, in the envelope', async () => {
    const { app, fastify } = await build({ maxRequestBodyBytes: 1024 });
    try {
      const bad = await fastify.inject({ method: 'POST', url: '/ping', headers: { 'content-type': 'application/json' }, payload: '{"a":' });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toEqual({ error: { message: expect.stringContaining('JSON'), type: 'Bad Request', param: 'body', code: 400 } });
      const big = await fastify.inject({
        method: 'POST',
        url: '/ping',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ prompt: 'x'.repeat(4096) }),
      });
      expect(big.statusCode).toBe(413);
      expect(big.json()).toEqual({ error: { message: expect.any(String), type: 'Payload Too Large', param: null, code: 413 } });
    } finally {
      await app.close();
    }
  });
});

describe('OpenAPI document', () => {
  it('marks @Public() operations with security: [], documents 401 on the rest and the error envelope (4XX/5XX) on all', async () => {
    const { app, fastify } = await build({ servedModelNames: ['tiny'] });
    try {
      const spec = (await fastify.inject({ method: 'GET', url: '/openapi.json' })).json();
      expect(spec.security).toEqual([{ bearer: [] }]);
      expect(spec.paths['/health'].get.security).toEqual([]);
      expect(spec.paths['/ping'].post.security).toEqual([]);
      expect(spec.paths['/v1/models'].get.security).toBeUndefined();
      expect(spec.paths['/v1/models'].get.responses['401'].content['application/json'].schema.$ref).toBe('#/components/schemas/UnauthorizedResponse');
      expect(spec.paths['/health'].get.responses['401']).toBeUndefined();
      expect(spec.paths['/health'].get.responses['4XX'].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorResponse');
      expect(spec.paths['/health'].get.responses['5XX'].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorResponse');
      // Body examples name the served model.
      expect(spec.paths['/v1/completions'].post.requestBody.content['application/json'].example.model).toBe('tiny');
      expect(spec.components.schemas.ErrorResponse.properties.error.$ref).toBe('#/components/schemas/ErrorInfo');
      expect(JSON.stringify(spec)).not.toContain('x-ortllm-public');
    } finally {
      await app.close();
    }
  });
});
