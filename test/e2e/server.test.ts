// The server's cross-cutting behaviour (child process, free port): error envelopes for each
// case, X-Request-Id echo, /v1/models shape, /version, a strict parse of /metrics, Swagger UI
// assets, the CLI's --help / usage errors, TLS and --enable-log-requests.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultTestModel, REPO_ROOT, runCli, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';
import { SERVER_FLAGS } from '../../src/config/server-flags';
import { TTFT_BUCKETS } from '../../src/modules/metrics/buckets';
import { readGgufModel } from '../../src/model/gguf/load-gguf';
import { kvBytesPerBlock } from '../../src/model/runner';
import { nativeKernels } from '../../src/model/runner/native-kernels';

const model = defaultTestModel();
const onModel = needs(model);

function post(server: TestServer, path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

 
async function json(res: Response): Promise<any> {
  return res.json();
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Strict Prometheus text-format parser: throws on any line it does not understand. NaN is
 * matched case-insensitively, as Prometheus' own parser does (prom-client writes "Nan"). */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const metricName = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const help = new RegExp(`^# HELP (${metricName}) .*$`);
  const type = new RegExp(`^# TYPE (${metricName}) (counter|gauge|histogram|summary|untyped)$`);
  const sample = new RegExp(`^(${metricName})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\]|\\\\.)*",?)*)\\})? (-?[0-9.e+-]+|[Nn]a[Nn]|\\+Inf|-Inf)$`);
  for (const line of text.split('\n')) {
    if (line === '' || help.test(line)) continue;
    const t = type.exec(line);
    if (t) {
      types.set(t[1], t[2]);
      continue;
    }
    const s = sample.exec(line);
    if (!s) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const m of (s[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]] = m[2];
    samples.push({ name: s[1], labels, value: /^nan$/i.test(s[3]) ? NaN : Number(s[3].replace('+Inf', 'Infinity')) });
  }
  return { types, samples };
}

onModel.describe('the server on a real port', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer([
      '--served-model-name', 'stories', 'tiny-alias',
      '--enable-request-id-headers',
      '--max-request-body-size', '64KiB',
      '--kv-cache-memory', '4MiB',
    ]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it('prints the ready line with the real port', () => {
    expect(server.output()).toMatch(/INFO ortllm serving stories at http:\/\/127\.0\.0\.1:\d+/);
    expect(server.port).toBeGreaterThan(0);
  });

  it('answers request validation errors with 400 and the field in `param`', async () => {
    const res = await post(server, '/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 'many' }));
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body).toEqual({ error: { message: expect.any(String), type: expect.any(String), param: 'max_tokens', code: 400 } });
  });

  it('answers an unknown model with 404: vLLM\'s "The model `X` does not exist." and the served names', async () => {
    const res = await post(server, '/v1/completions', JSON.stringify({ model: 'gpt-17', prompt: 'Once', max_tokens: 1 }));
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({
      error: { message: 'The model `gpt-17` does not exist. Served model names: `stories`, `tiny-alias`.', type: 'NotFoundError', param: 'model', code: 404 },
    });
  });

  it('accepts every served name and reports the first', async () => {
    const res = await post(server, '/v1/completions', JSON.stringify({ model: 'tiny-alias', prompt: 'Once', max_tokens: 1 }));
    expect(res.status).toBe(200);
    expect((await json(res)).model).toBe('stories');
  });

  it('answers malformed JSON with 400', async () => {
    const res = await post(server, '/v1/completions', '{"prompt": "Once", ');
    expect(res.status).toBe(400);
    // The HTTP layer's body errors name the body as their param (docs/routes.md: errors).
    expect(await json(res)).toEqual({ error: { message: expect.stringContaining('JSON'), type: 'Bad Request', param: 'body', code: 400 } });
  });

  it('answers a body over --max-request-body-size with 413', async () => {
    const res = await post(server, '/v1/completions', JSON.stringify({ prompt: 'x'.repeat(70 * 1024), max_tokens: 1 }));
    expect(res.status).toBe(413);
    expect(await json(res)).toEqual({ error: { message: expect.any(String), type: 'Payload Too Large', param: null, code: 413 } });
  });

  it('answers an unknown route with the 404 envelope and never leaks a stack', async () => {
    const res = await fetch(`${server.baseUrl}/v1/nothing-here`);
    expect(res.status).toBe(404);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { message: expect.any(String), type: 'Not Found', param: null, code: 404 } });
    expect(text).not.toMatch(/at .*\.(js|ts):\d+/);
  });

  it('has no speech-to-text routes for a text model', async () => {
    const form = new FormData();
    form.append('file', new File([new Uint8Array(64)], 'a.wav'));
    for (const path of ['/v1/audio/transcriptions', '/v1/audio/translations']) {
      expect((await fetch(`${server.baseUrl}${path}`, { method: 'POST', body: form })).status).toBe(404);
    }
  });

  it('echoes X-Request-Id, uses it as the base of the response id, or sends a fresh one', async () => {
    const res = await post(server, '/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 1 }), { 'x-request-id': 'my-req-42' });
    expect(res.headers.get('x-request-id')).toBe('my-req-42');
    expect((await json(res)).id).toBe('cmpl-my-req-42');
    const fresh = await fetch(`${server.baseUrl}/v1/models`);
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('lists the served names in vLLM ModelList shape', async () => {
    const body = await json(await fetch(`${server.baseUrl}/v1/models`));
    expect(body.object).toBe('list');
    expect(body.data).toHaveLength(2);
    for (const [i, id] of ['stories', 'tiny-alias'].entries()) {
      expect(body.data[i]).toEqual({
        id,
        object: 'model',
        created: expect.any(Number),
        owned_by: 'vllm',
        root: model,
        parent: null,
        max_model_len: expect.any(Number),
        permission: [
          {
            id: expect.stringMatching(/^modelperm-[0-9a-f]{32}$/),
            object: 'model_permission',
            created: expect.any(Number),
            allow_create_engine: false,
            allow_sampling: true,
            allow_logprobs: true,
            allow_search_indices: false,
            allow_view: true,
            allow_fine_tuning: false,
            organization: '*',
            group: null,
            is_blocking: false,
          },
        ],
      });
    }
    expect(body.data[0].max_model_len).toBeGreaterThan(0);
  });

  it('stores the KV cache of a GGUF model in float16 without --kv-cache-dtype (auto = llama.cpp\'s f16; float32 without the addon): the budget holds 16-bit blocks', async () => {
    const { config } = await readGgufModel(defaultTestModel());
    const stored = nativeKernels() ? 'float16' : 'float32';
    const blocks = Math.floor(4 * 2 ** 20 / kvBytesPerBlock(config, 16, stored));
    expect(server.output()).toContain(`KV cache: ${blocks} blocks of 16 tokens, ${stored}`);
    const info = /vllm:cache_config_info\{([^}]*)\}/.exec(await (await fetch(`${server.baseUrl}/metrics`)).text())![1];
    expect(info).toContain('cache_dtype="auto"');
    expect(info).toContain(`num_gpu_blocks="${blocks}"`);
  });

  it('answers /version with the package version', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(await json(await fetch(`${server.baseUrl}/version`))).toEqual({ version: pkg.version });
  });

  it('exposes /metrics that parse, with vLLM names, types, buckets and counts after traffic', async () => {
    await post(server, '/v1/completions', JSON.stringify({ prompt: 'Once upon a time', max_tokens: 5, ignore_eos: true }));
    const res = await fetch(`${server.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const { types, samples } = parseExposition(await res.text());
    const expectedTypes: Record<string, string> = {
      'vllm:num_requests_running': 'gauge',
      'vllm:num_requests_waiting': 'gauge',
      'vllm:kv_cache_usage_perc': 'gauge',
      'vllm:prompt_tokens_total': 'counter',
      'vllm:generation_tokens_total': 'counter',
      'vllm:request_success_total': 'counter',
      'vllm:num_preemptions_total': 'counter',
      'vllm:prefix_cache_queries_total': 'counter',
      'vllm:prefix_cache_hits_total': 'counter',
      'vllm:mm_cache_queries_total': 'counter',
      'vllm:mm_cache_hits_total': 'counter',
      'vllm:time_to_first_token_seconds': 'histogram',
      'vllm:inter_token_latency_seconds': 'histogram',
      'vllm:e2e_request_latency_seconds': 'histogram',
      'vllm:request_queue_time_seconds': 'histogram',
      'vllm:request_prompt_tokens': 'histogram',
      'vllm:request_generation_tokens': 'histogram',
      'vllm:iteration_tokens_total': 'histogram',
      'vllm:request_params_n': 'histogram',
      http_requests_total: 'counter',
      http_request_duration_seconds: 'histogram',
    };
    for (const [name, type] of Object.entries(expectedTypes)) expect([name, types.get(name)]).toEqual([name, type]);
    const one = (name: string, extra: Record<string, string> = {}): number => {
      const found = samples.filter(
        (s) => s.name === name && s.labels.model_name === 'stories' && Object.entries(extra).every(([k, v]) => s.labels[k] === v),
      );
      expect(found).toHaveLength(1);
      return found[0].value;
    };
    expect(one('vllm:generation_tokens_total')).toBeGreaterThanOrEqual(5);
    expect(one('vllm:prompt_tokens_total')).toBeGreaterThan(0);
    expect(one('vllm:request_success_total', { finished_reason: 'length' })).toBeGreaterThanOrEqual(1);
    expect(one('vllm:time_to_first_token_seconds_count')).toBeGreaterThanOrEqual(1);
    const ttftBounds = samples
      .filter((s) => s.name === 'vllm:time_to_first_token_seconds_bucket')
      .map((s) => s.labels.le)
      .filter((le) => le !== '+Inf')
      .map(Number);
    expect(ttftBounds).toEqual(TTFT_BUCKETS);
    const completions = samples.find((s) => s.name === 'http_requests_total' && s.labels.handler === '/v1/completions' && s.labels.status === '2xx');
    expect(completions?.value).toBeGreaterThanOrEqual(1);
    expect(samples.some((s) => s.name === 'http_requests_total' && s.labels.handler === '/metrics')).toBe(false);
  });

  it('aborts the engine request when a streaming client disconnects', async () => {
    const metric = async (name: string, labels: Record<string, string>): Promise<number> => {
      const { samples } = parseExposition(await (await fetch(`${server.baseUrl}/metrics`)).text());
      const found = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
      return found?.value ?? 0;
    };
    const abortsBefore = await metric('vllm:request_success_total', { finished_reason: 'abort' });
    const controller = new AbortController();
    const res = await fetch(`${server.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once', max_tokens: 1800, ignore_eos: true, stream: true }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    const aborts = () => metric('vllm:request_success_total', { finished_reason: 'abort' });
    await waitFor(async () => (await aborts()) > abortsBefore, 10_000, 'the abort in /metrics');
    expect(await aborts()).toBe(abortsBefore + 1);
    expect(await metric('vllm:num_requests_running', { model_name: 'stories' })).toBe(0);
  });

  it('serves the Swagger UI and its assets from the npm package', async () => {
    const html = await (await fetch(`${server.baseUrl}/docs`)).text();
    expect(html).toContain('swagger-ui');
    for (const asset of ['swagger-ui-bundle.js', 'swagger-ui.css', 'swagger-ui-standalone-preset.js', 'swagger-ui-init.js']) {
      const res = await fetch(`${server.baseUrl}/docs/${asset}`);
      expect([asset, res.status]).toEqual([asset, 200]);
    }
    const spec = await json(await fetch(`${server.baseUrl}/openapi.json`));
    expect(spec.paths['/v1/models'].get).toBeDefined();
    expect(spec.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});

describe('ortllm CLI', () => {
  it('documents every flag in `serve --help` and exits 0', async () => {
    const { code, stdout } = await runCli(['serve', '--help']);
    expect(code).toBe(0);
    for (const spec of SERVER_FLAGS) expect(stdout).toContain(spec.flags.split(' ')[0]);
    expect(stdout).toContain('[MODEL]');
  }, SERVER_START_TIMEOUT_MS);

  it('`npm start -- FLAGS` is `ortllm serve FLAGS`', async () => {
    const direct = await runCli(['serve', '--help']);
    const viaNpm = spawnSync('npm', ['start', '--silent', '--', '--help'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(viaNpm.status).toBe(0);
    expect(viaNpm.stdout).toBe(direct.stdout);
    const bad = spawnSync('npm', ['start', '--silent', '--', '--frobnicate'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(bad.status).toBe(2);
  }, SERVER_START_TIMEOUT_MS);

  it('exits 2 with a clear message on an unknown flag, a malformed value or a bad choice', async () => {
    const unknown = await runCli(['serve', '--frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
    const malformed = await runCli(['serve', '--max-num-seqs', 'lots']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--max-num-seqs.*'lots' is not an integer/);
    const choice = await runCli(['serve', '--scheduling-policy', 'random']);
    expect(choice.code).toBe(2);
    expect(choice.stderr).toContain('Allowed choices are fcfs, priority');
  }, SERVER_START_TIMEOUT_MS);

  it('fails clearly on a model file that does not exist', async () => {
    const { code, stderr, stdout } = await runCli(['serve', '/nonexistent/model.gguf', '--port', '0']);
    expect(code).not.toBe(0);
    expect(`${stdout}${stderr}`).toContain('/nonexistent/model.gguf');
  }, SERVER_START_TIMEOUT_MS);
});

onModel.describe('TLS and request logging on a real server', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-tls-'));
    const made = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ]);
    if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
    server = await startServer([
      '--ssl-keyfile', join(dir, 'key.pem'),
      '--ssl-certfile', join(dir, 'cert.pem'),
      '--enable-log-requests',
    ]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves HTTPS with the given certificate and logs requests', async () => {
    expect(server.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        `${server.baseUrl}/v1/completions`,
        { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json', 'x-request-id': 'tls-1' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ prompt: 'Once', max_tokens: 2 }));
    });
    expect(status).toBe(200);
    expect(JSON.parse(body).object).toBe('text_completion');
    const logged = /Received request tls-1: POST \/v1\/completions \{"prompt":"Once","max_tokens":2\}/;
    await waitFor(() => logged.test(server.output()), 10_000, 'the request log line');
  });
});
