// The pooling routes on real servers with the official openai client: a random BERT embedder
// (MEAN pooling from its sentence-transformers files) and a random BERT cross-encoder written in
// the real Hugging Face layout and checked against the test's own reference forward, stories260K
// served as an embedder (--convert embed), and 32 concurrent embedding requests while another
// server generates. /invocations and run-batch route pooling bodies as the endpoints answer them.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { cosine, referenceClassifierLogits, referenceEncoderStates, referencePool, writeEncoderDir, type WrittenEncoder } from '../helpers/encoder-model';
import { SERVER_START_TIMEOUT_MS, defaultTestModel, runCli, startServer, type TestServer } from '../helpers/server';
import { referenceBertEncode } from '../helpers/test-tokenizers';
import { needs } from '../helpers/needs';
import { nativeKernels } from '../../src/model/runner/native-kernels';
import { expectApiError, postJson } from './completions-helpers';

const SHAPE = { hidden: 32, layers: 2, heads: 4, intermediate: 64, maxPositions: 64 };
const TEXTS = ['The quick brown fox jumps over the lazy dog.', 'hello world', 'A cat sat on the mat, unbelievable!'];
const stories = defaultTestModel();

let tmp: string;
let embedder: WrittenEncoder;
let crossEncoder: WrittenEncoder;
let embedServer: TestServer;
let scoreServer: TestServer;
let client: OpenAI;

/** The little-endian float32 values of a base64 embedding. */
function base64Floats(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(4 * i));
}

/**
 * Two answers to the same request agree: equal but for id and created, and numbers within 1e-5 (a
 * vector computed in another batch may differ in the last bits); base64 embeddings are compared as
 * the floats they encode.
 */
function expectSameAnswer(actual: unknown, expected: unknown, path = 'body'): void {
  if (typeof expected === 'number') {
    expect([path, Math.abs((actual as number) - expected) <= 1e-5]).toEqual([path, true]);
  } else if (typeof expected === 'string' && path.endsWith('.embedding')) {
    expectSameAnswer(base64Floats(actual as string), base64Floats(expected), `${path}[]`);
  } else if (Array.isArray(expected)) {
    expect([path, (actual as unknown[]).length]).toEqual([path, expected.length]);
    expected.forEach((e, i) => expectSameAnswer((actual as unknown[])[i], e, `${path}.${i}`));
  } else if (expected !== null && typeof expected === 'object') {
    const keys = (o: object) => Object.keys(o).filter((k) => path !== 'body' || (k !== 'id' && k !== 'created')).sort();
    expect([path, keys(actual as object)]).toEqual([path, keys(expected)]);
    for (const k of keys(expected)) expectSameAnswer((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], `${path}.${k}`);
  } else {
    expect([path, actual]).toEqual([path, expected]);
  }
}

function referenceEmbedding(text: string): Float64Array {
  return referencePool(referenceEncoderStates(embedder, referenceBertEncode(text).ids), 'MEAN');
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'ortllm-embed-e2e-'));
  embedder = writeEncoderDir(join(tmp, 'minilm'), { family: 'bert', numLabels: null, ...SHAPE }, 41, { pooling: 'mean', normalize: true });
  crossEncoder = writeEncoderDir(join(tmp, 'reranker'), { family: 'bert', numLabels: 1, ...SHAPE }, 42);
  [embedServer, scoreServer] = await Promise.all([
    startServer(['--served-model-name', 'minilm', '--chat-template', '{% for m in messages %}{{ m.content }} {% endfor %}'], { model: embedder.dir }),
    startServer(['--served-model-name', 'reranker'], { model: crossEncoder.dir }),
  ]);
  client = new OpenAI({ baseURL: `${embedServer.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
}, SERVER_START_TIMEOUT_MS);
afterAll(async () => {
  await Promise.all([embedServer?.stop(), scoreServer?.stop()]);
  rmSync(tmp, { recursive: true, force: true });
});

describe('/v1/embeddings (random BERT, MEAN pooling, normalised)', () => {
  it('matches the reference forward within 1e-4 cosine, unit length, usage = prompt tokens', async () => {
    const res = await client.embeddings.create({ model: 'minilm', input: TEXTS, encoding_format: 'float' });
    expect(res.object).toBe('list');
    expect(res.model).toBe('minilm');
    res.data.forEach((d, i) => {
      expect([d.index, d.object, d.embedding.length]).toEqual([i, 'embedding', SHAPE.hidden]);
      expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 5);
      expect(cosine(d.embedding, referenceEmbedding(TEXTS[i]))).toBeGreaterThan(1 - 1e-4);
    });
    const promptTokens = TEXTS.reduce((n, t) => n + referenceBertEncode(t).ids.length, 0);
    expect(res.usage).toEqual({ prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0, prompt_tokens_details: null });
  });

  it('base64 (the SDK default, decoded by the SDK) equals float, and a batch equals single requests', async () => {
    const floats = await client.embeddings.create({ model: 'minilm', input: TEXTS, encoding_format: 'float' });
    const decoded = await client.embeddings.create({ model: 'minilm', input: TEXTS });
    decoded.data.forEach((d, i) => expect(d.embedding).toEqual(floats.data[i].embedding));
    const raw = await client.embeddings.create({ model: 'minilm', input: TEXTS[0], encoding_format: 'base64' });
    const bytes = Buffer.from(raw.data[0].embedding as unknown as string, 'base64');
    expect(Array.from({ length: SHAPE.hidden }, (_, j) => bytes.readFloatLE(4 * j))).toEqual(floats.data[0].embedding);
    // The route writes its JSON itself: the same media type as Fastify's, floats as JSON.stringify prints them.
    const res = await fetch(`${embedServer.baseUrl}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: TEXTS, encoding_format: 'float' }) });
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const text = await res.text();
    expect(text).toBe(JSON.stringify(JSON.parse(text)));
    expect((JSON.parse(text) as typeof floats).data.map((d) => d.embedding)).toEqual(floats.data.map((d) => d.embedding));
    for (let i = 0; i < TEXTS.length; i++) {
      const single = await client.embeddings.create({ model: 'minilm', input: TEXTS[i], encoding_format: 'float' });
      single.data[0].embedding.forEach((v, j) => expect(v).toBeCloseTo(floats.data[i].embedding[j], 5));
    }
  });

  it('takes token ids and chat messages', async () => {
    const ids = referenceBertEncode(TEXTS[1]).ids;
    const byIds = await client.embeddings.create({ model: 'minilm', input: ids, encoding_format: 'float' });
    expect(cosine(byIds.data[0].embedding, referenceEmbedding(TEXTS[1]))).toBeGreaterThan(1 - 1e-4);
    const chat = await postJson(embedServer.baseUrl, '/v1/embeddings', { messages: [{ role: 'user', content: 'hello world' }] });
    expect(chat.status).toBe(200);
    // The template renders "hello world " and messages add no special tokens by default.
    expect(chat.json.usage.prompt_tokens).toBe(2);
  });

  it('answers bad input with 400 and the offending param, and keeps serving', async () => {
    await expectApiError(client.embeddings.create({ model: 'minilm', input: [] }), 400, 'input');
    const long = await expectApiError(client.embeddings.create({ model: 'minilm', input: 'hello '.repeat(80) }), 400, 'input');
    expect(long.message).toMatch(/maximum context length is 64 tokens. However, you requested 82 tokens in the input for embedding generation/);
    await expectApiError(client.embeddings.create({ model: 'minilm', input: 'hello', dimensions: 8 }), 400, 'dimensions');
    await expectApiError(client.embeddings.create({ model: 'other', input: 'hello' }), 404, 'model');
    const truncated = await client.embeddings.create({ model: 'minilm', input: 'hello '.repeat(80), encoding_format: 'float', truncate_prompt_tokens: -1 } as never);
    expect(truncated.usage.prompt_tokens).toBe(64);
    expect((await client.embeddings.create({ model: 'minilm', input: '' })).usage.prompt_tokens).toBe(2); // [CLS] [SEP]
  });

  it('registers no generation routes, and counts pooling requests in the vLLM metrics', async () => {
    expect((await postJson(embedServer.baseUrl, '/v1/completions', { prompt: 'x' })).status).toBe(404);
    expect((await postJson(embedServer.baseUrl, '/classify', { input: 'x' })).status).toBe(404);
    const metrics = await (await fetch(`${embedServer.baseUrl}/metrics`)).text();
    const value = (line: string) => Number(metrics.split('\n').find((l) => l.startsWith(line))!.split(' ').pop());
    expect(value('vllm:request_success_total{model_name="minilm",engine="0",finished_reason="stop"}')).toBeGreaterThan(10);
    expect(value('vllm:prompt_tokens_total{model_name="minilm",engine="0"}')).toBeGreaterThan(50);
    expect(value('vllm:e2e_request_latency_seconds_count{model_name="minilm",engine="0"}')).toBeGreaterThan(10);
  });

  it('/pooling gives the raw pooled vector with normalize false, and /score the cosine similarity', async () => {
    const pooled = await postJson(embedServer.baseUrl, '/pooling', { input: TEXTS[0], normalize: false });
    expect(cosine(pooled.json.data[0].data, referenceEmbedding(TEXTS[0]))).toBeGreaterThan(1 - 1e-4);
    const ref = referenceEmbedding(TEXTS[0]);
    expect(Math.hypot(...pooled.json.data[0].data)).toBeCloseTo(Math.hypot(...ref), 3);
    const score = await postJson(embedServer.baseUrl, '/score', { text_1: TEXTS[0], text_2: [TEXTS[0], TEXTS[1]] });
    expect(score.json.data[0].score).toBeCloseTo(1, 5);
    expect(score.json.data[1].score).toBeCloseTo(cosine(ref, referenceEmbedding(TEXTS[1])), 4);
  });
});

const bf16Cpu = nativeKernels()?.bf16Available === true;
if (!bf16Cpu) console.warn('\n*** SKIPPING the --dtype bfloat16 embeddings test: the addon is not built or this CPU has no AVX512-BF16 ***\n');

(bf16Cpu ? describe : describe.skip)(`/v1/embeddings with --dtype bfloat16${bf16Cpu ? '' : ' [skipped: no addon or no AVX512-BF16]'}`, () => {
  let bf16Server: TestServer;
  beforeAll(async () => {
    bf16Server = await startServer(['--served-model-name', 'minilm', '--dtype', 'bfloat16'], { model: embedder.dir });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => bf16Server?.stop());

  // bfloat16 keeps 8 significant bits: pooled vectors move ~1e-3 relative, a cosine within a few
  // 1e-6 of the float32 one's (test/unit/model/bf16-gemm.test.ts has the argument); 1 - 1e-4 is
  // the margin both there and here.
  it('embeds within 1e-4 cosine of the float32 server and of the reference forward', async () => {
    const bf16Client = new OpenAI({ baseURL: `${bf16Server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
    const [ours, float32] = await Promise.all([bf16Client, client].map((c) => c.embeddings.create({ model: 'minilm', input: TEXTS, encoding_format: 'float' })));
    ours.data.forEach((d, i) => {
      expect(d.embedding.length).toBe(SHAPE.hidden);
      expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 5);
      expect(cosine(d.embedding, float32.data[i].embedding)).toBeGreaterThan(1 - 1e-4);
      expect(cosine(d.embedding, referenceEmbedding(TEXTS[i]))).toBeGreaterThan(1 - 1e-4);
      // Not the float32 answer bit for bit: the bfloat16 path did run.
      expect(d.embedding).not.toEqual(float32.data[i].embedding);
    });
  });
});

describe('/invocations and run-batch on the embedding model', () => {
  it('/invocations routes pooling bodies by shape and answers as the routed endpoint', async () => {
    const cases: Array<[string, object]> = [
      ['/v1/embeddings', { input: TEXTS, encoding_format: 'float' }],
      ['/v1/embeddings', { messages: [{ role: 'user', content: 'hello world' }], encoding_format: 'base64' }],
      ['/score', { text_1: TEXTS[0], text_2: [TEXTS[1], TEXTS[2]] }],
      ['/rerank', { query: TEXTS[0], documents: [TEXTS[1], TEXTS[2]] }],
    ];
    for (const [path, body] of cases) {
      const [direct, routed] = await Promise.all([postJson(embedServer.baseUrl, path, body), postJson(embedServer.baseUrl, '/invocations', body)]);
      expect([path, routed.status]).toEqual([path, 200]);
      expectSameAnswer(routed.json, direct.json);
    }
    const invalid = await postJson(embedServer.baseUrl, '/invocations', { input: [] });
    expect([invalid.status, invalid.json.error.param]).toEqual([400, 'input']);
    const neither = await postJson(embedServer.baseUrl, '/invocations', { prompt: 'x', max_tokens: 4 });
    expect([neither.status, neither.json.error.message]).toEqual([
      400,
      'Cannot find suitable handler for request. Expected one of: EmbeddingRequest, RerankRequest, ScoreRequest, PoolingRequest',
    ]);
  });

  it('ortllm run-batch answers /v1/embeddings, /score and /rerank lines as the server does, and refuses chat', async () => {
    const lines = [
      { custom_id: 'e1', url: '/v1/embeddings', body: { model: 'minilm', input: TEXTS[0], encoding_format: 'float' } },
      { custom_id: 'e2', url: '/v1/embeddings', body: { model: 'minilm', input: TEXTS, encoding_format: 'base64' } },
      { custom_id: 'e3', url: '/v1/embeddings', body: { model: 'minilm', input: referenceBertEncode(TEXTS[1]).ids } },
      { custom_id: 's1', url: '/v1/score', body: { model: 'minilm', text_1: TEXTS[0], text_2: TEXTS[1] } },
      { custom_id: 'r1', url: '/v2/rerank', body: { model: 'minilm', query: TEXTS[0], documents: [TEXTS[1], TEXTS[2]] } },
      { custom_id: 'bad', url: '/v1/embeddings', body: { model: 'minilm', input: [] } },
      { custom_id: 'chat', url: '/v1/chat/completions', body: { model: 'minilm', messages: [{ role: 'user', content: 'hi' }] } },
    ];
    const input = join(tmp, 'embed-batch.jsonl');
    const output = join(tmp, 'embed-batch-out.jsonl');
    writeFileSync(input, lines.map((l) => JSON.stringify({ method: 'POST', ...l })).join('\n'));
    const run = await runCli(['run-batch', '-i', input, '-o', output, '--model', embedder.dir, '--served-model-name', 'minilm']);
    expect([run.code, run.stderr.slice(-2000)]).toEqual([0, expect.stringContaining('Running batch: 100% Completed | 7/7')]);
    const records = readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(records.map((r) => r.custom_id)).toEqual(lines.map((l) => l.custom_id));
    for (const [i, line] of lines.slice(0, 5).entries()) {
      const http = await postJson(embedServer.baseUrl, line.url, line.body);
      expect([line.custom_id, records[i].error, records[i].response.status_code]).toEqual([line.custom_id, null, 200]);
      expectSameAnswer(records[i].response.body, http.json);
    }
    expect(records[5]).toMatchObject({ response: { status_code: 400, body: null }, error: { error: { code: 400, param: 'input' } } });
    expect(records[6]).toMatchObject({ response: { status_code: 400, body: null }, error: 'The model does not support Chat Completions API' });
  });
});

describe('/score and /rerank on a random cross-encoder (BertForSequenceClassification, 1 label)', () => {
  const query = 'what is a panda?';
  const docs = ['a bear eats bamboo.', 'paris is the capital of france.', 'the quick brown fox'];
  const expected = () =>
    docs.map((d) => {
      const pair = referenceBertEncode(query, d);
      const logit = referenceClassifierLogits(crossEncoder, referenceEncoderStates(crossEncoder, pair.ids, pair.typeIds)[0])[0];
      return 1 / (1 + Math.exp(-logit));
    });

  it('/score (1:N) gives the sigmoid of the reference logit of each sentence pair', async () => {
    const r = await postJson(scoreServer.baseUrl, '/v1/score', { model: 'reranker', text_1: query, text_2: docs });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ object: 'list', model: 'reranker', id: expect.stringMatching(/^score-/) });
    r.json.data.forEach((d: { score: number }, i: number) => expect(d.score).toBeCloseTo(expected()[i], 4));
    expect(r.json.usage.prompt_tokens).toBe(docs.reduce((n, d) => n + referenceBertEncode(query, d).ids.length, 0));
  });

  it('/rerank, /v1/rerank and /v2/rerank sort by relevance_score and keep top_n', async () => {
    const order = expected().map((s, i) => [s, i] as const).sort((a, b) => b[0] - a[0]).map(([, i]) => i);
    for (const path of ['/rerank', '/v1/rerank', '/v2/rerank']) {
      const r = await postJson(scoreServer.baseUrl, path, { query, documents: docs, top_n: 2 });
      expect(r.json.results.map((x: { index: number }) => x.index)).toEqual(order.slice(0, 2));
      expect(r.json.results[0].document).toEqual({ text: docs[order[0]] });
      expect(r.json.results[0].relevance_score).toBeCloseTo(expected()[order[0]], 4);
    }
    const bare = await postJson(scoreServer.baseUrl, '/rerank', { query, documents: docs, return_documents: false });
    expect(bare.json.results.every((x: object) => !('document' in x))).toBe(true);
  });

  it('/classify gives the probability and label; the embeddings route is not there', async () => {
    const r = await postJson(scoreServer.baseUrl, '/classify', { input: query });
    expect(r.json.data[0]).toMatchObject({ index: 0, label: 'label_0', num_classes: 1 });
    expect((await postJson(scoreServer.baseUrl, '/v1/embeddings', { input: query })).status).toBe(404);
    const bad = await postJson(scoreServer.baseUrl, '/score', { text_1: ['a', 'b'], text_2: ['c', 'd', 'e'] });
    expect([bad.status, bad.json.error.message]).toEqual([400, 'Input lengths must be either 1:1, 1:N or N:N']);
  });

  it('/invocations sends `input` to /classify and `query` to /rerank on a cross-encoder', async () => {
    for (const [path, body] of [['/classify', { input: [query, docs[0]] }], ['/rerank', { query, documents: docs }]] as const) {
      const [direct, routed] = await Promise.all([postJson(scoreServer.baseUrl, path, body), postJson(scoreServer.baseUrl, '/invocations', body)]);
      expect([path, routed.status]).toEqual([path, 200]);
      expectSameAnswer(routed.json, direct.json);
    }
  });
});

describe('the served OpenAPI specs of pooling models', () => {
  it("document exactly the routes each model has, and every body example succeeds as it stands", async () => {
    const expected: Record<string, string[]> = {
      minilm: ['/pooling', '/rerank', '/score', '/v1/embeddings', '/v1/rerank', '/v1/score', '/v2/rerank'],
      reranker: ['/classify', '/pooling', '/rerank', '/score', '/v1/rerank', '/v1/score', '/v2/rerank'],
    };
    for (const [name, server] of [['minilm', embedServer], ['reranker', scoreServer]] as const) {
      const spec = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { example?: object }> } }>> };
      const pooling = Object.keys(spec.paths).filter((path) => /embeddings|pooling|classify|score|rerank/.test(path)).sort();
      expect([name, pooling]).toEqual([name, expected[name]]);
      expect(Object.keys(spec.paths)).not.toContain('/v1/completions');
      for (const path of pooling) {
        const example = spec.paths[path].post.requestBody!.content['application/json'].example!;
        const r = await postJson(server.baseUrl, path, example);
        expect([name, path, r.status, (example as { model?: string }).model]).toEqual([name, path, 200, name]);
      }
    }
  });
});

needs(stories).describe('stories260K', () => {
  let embed: TestServer;
  let generate: TestServer;
  beforeAll(async () => {
    [embed, generate] = await Promise.all([startServer(['--convert', 'embed']), startServer()]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all([embed?.stop(), generate?.stop()]);
  });

  it('--convert embed returns hidden-size vectors of norm 1; a generation server has no /v1/embeddings', async () => {
    const c = new OpenAI({ baseURL: `${embed.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
    const res = await c.embeddings.create({ model: stories, input: ['Once upon a time', 'Lily went to the park'], encoding_format: 'float' });
    for (const d of res.data) {
      expect(d.embedding).toHaveLength(64);
      expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 5);
    }
    expect(cosine(res.data[0].embedding, res.data[1].embedding)).toBeLessThan(0.9999);
    expect((await postJson(generate.baseUrl, '/v1/embeddings', { input: 'x' })).status).toBe(404);
    expect((await postJson(embed.baseUrl, '/v1/completions', { prompt: 'x' })).status).toBe(404);
  });

  it('32 concurrent embedding requests while another server generates: no errors, batch results equal single ones', async () => {
    const inputs = Array.from({ length: 32 }, (_, i) => `${TEXTS[i % 3]} ${'hello world '.repeat(i % 5)}`.trim());
    const singles: number[][] = [];
    for (const input of inputs.slice(0, 8)) singles.push((await client.embeddings.create({ model: 'minilm', input, encoding_format: 'float' })).data[0].embedding);
    const load = Promise.all(
      Array.from({ length: 4 }, () => postJson(generate.baseUrl, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 96, temperature: 0.8 })),
    );
    const results = await Promise.all(inputs.map((input) => client.embeddings.create({ model: 'minilm', input, encoding_format: 'float' })));
    expect((await load).every((r) => r.status === 200)).toBe(true);
    results.slice(0, 8).forEach((r, i) => r.data[0].embedding.forEach((v, j) => expect(v).toBeCloseTo(singles[i][j], 5)));
    results.forEach((r, i) => expect(cosine(r.data[0].embedding, referenceEmbedding(inputs[i]))).toBeGreaterThan(1 - 1e-4));
  });
});
