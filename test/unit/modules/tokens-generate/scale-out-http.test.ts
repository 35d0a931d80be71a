// The scale-out routes on the real app factory (Fastify, in-process) with a scripted engine:
// registration by flag, auth (legacy abort open), validation envelopes, SSE framing, abort of an
// in-flight request, render → generate → derender round trips.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../../../src/app-factory';
import { resolveServerConfig, type ServerConfig } from '../../../../src/config/server-config';
import { createChatTemplate } from '../../../../src/model/chat-template';
import { createBuiltinTokenizer } from '../../../../src/model/tokenizer';
import { FakeEngine } from '../../../helpers/fake-engine';
import { waitFor } from '../../../helpers/wait';

const tokenizer = createBuiltinTokenizer();
const SCRIPT = [...Buffer.from('Once upon a time.')];
const TEMPLATE =
  "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }}<|im_end|>{% endgeneration %}" +
  "{% else %}{{ m['content'] }}<|im_end|>{% endif %}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

interface Built {
  app: NestFastifyApplication;
  fastify: FastifyInstance;
  engine: FakeEngine;
}

async function build(flags: Partial<ServerConfig>, engineOpts: Partial<ConstructorParameters<typeof FakeEngine>[0]> = {}): Promise<Built> {
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-tg-'));
  const templatePath = join(dir, 'template.jinja');
  writeFileSync(templatePath, TEMPLATE);
  const config = resolveServerConfig(
    { model: '/models/tiny.gguf', servedModelNames: ['tiny'], disableUvicornAccessLog: true, logLevel: 'error', chatTemplate: templatePath, ...flags },
    {},
  );
  const engine = new FakeEngine({
    tokenizer: config.skipTokenizerInit ? null : tokenizer,
    chatTemplate: config.skipTokenizerInit ? null : createChatTemplate(TEMPLATE, { bos_token: '<s>', eos_token: '</s>' }),
    script: SCRIPT,
    ...engineOpts,
  });
  const app = await createApp(config, { engine });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  return { app, fastify, engine };
}

async function post(fastify: FastifyInstance, url: string, payload: unknown, headers: Record<string, string> = {}) {
  const res = await fastify.inject({ method: 'POST', url, payload: payload as object, headers });
  let json: any = null;
  try {
    json = JSON.parse(res.body);
  } catch {
    /* SSE or empty */
  }
  return { status: res.statusCode, json, body: res.body, headers: res.headers };
}

function sseEvents(body: string): any[] {
  const frames = body.split('\n\n').filter((f) => f.startsWith('data: '));
  expect(frames[frames.length - 1]).toBe('data: [DONE]');
  return frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)));
}

describe('registration by flag', () => {
  it('has no scale-out routes on a plain server', async () => {
    const { app, fastify } = await build({});
    expect((await post(fastify, '/inference/v1/generate', { token_ids: [1], sampling_params: {} })).status).toBe(404);
    expect((await post(fastify, '/v1/completions/render', { prompt: 'x' })).status).toBe(404);
    await app.close();
  });

  it('--tokens-only: generate and abort (key needed), legacy /abort_requests open, no text routes', async () => {
    const { app, fastify } = await build({ tokensOnly: true, apiKeys: ['k'] });
    const auth = { authorization: 'Bearer k' };
    expect((await post(fastify, '/inference/v1/generate', { token_ids: [1], sampling_params: { max_tokens: 1 } })).status).toBe(401);
    expect((await post(fastify, '/inference/v1/generate', { token_ids: [1], sampling_params: { max_tokens: 1 } }, auth)).status).toBe(200);
    expect((await post(fastify, '/inference/v1/abort_requests', { request_ids: ['generate-tokens-x'] })).status).toBe(401);
    expect((await post(fastify, '/inference/v1/abort_requests', { request_ids: ['generate-tokens-x'] }, auth)).status).toBe(200);
    const legacy = await post(fastify, '/abort_requests', { request_ids: ['generate-tokens-x'] });
    expect(legacy.status).toBe(200);
    expect(legacy.body).toBe('');
    for (const url of ['/v1/completions', '/v1/completions/render', '/v1/chat/completions/derender']) {
      expect((await post(fastify, url, {}, auth)).status).toBe(404);
    }
    await app.close();
  });

  it('--enable-scale-out: no legacy /abort_requests', async () => {
    const { app, fastify } = await build({ enableScaleOut: true });
    expect((await post(fastify, '/abort_requests', { request_ids: [] })).status).toBe(404);
    await app.close();
  });
});

describe('generate and abort over HTTP', () => {
  let built: Built;
  beforeAll(async () => {
    built = await build({ enableScaleOut: true }, { stepDelayMs: 2 });
  });
  afterAll(async () => built.app.close());

  it.each([
    [{ token_ids: [], sampling_params: {} }, 'token_ids'],
    [{ token_ids: [1, -2], sampling_params: {} }, 'token_ids'],
    [{ token_ids: [1] }, 'sampling_params'],
    [{ token_ids: [1], sampling_params: {}, output_mode: 'json' }, 'output_mode'],
  ])('answers 400 with the envelope for %j', async (payload, param) => {
    const res = await post(built.fastify, '/inference/v1/generate', payload);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'Bad Request', param, code: 400 });
  });

  it('uses the X-Request-Id header as the id base', async () => {
    const res = await post(built.fastify, '/inference/v1/generate', { token_ids: [1], sampling_params: { max_tokens: 2 }, request_id: 'body' }, { 'x-request-id': 'hdr' });
    expect(res.json.request_id).toBe('generate-tokens-hdr');
    expect(built.engine.requests[built.engine.requests.length - 1].requestId).toBe('generate-tokens-hdr');
  });

  it('streams SSE chunks ending with [DONE]', async () => {
    const res = await post(built.fastify, '/inference/v1/generate', {
      token_ids: [1],
      sampling_params: { max_tokens: 3 },
      output_mode: 'text',
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    const events = sseEvents(res.body);
    expect(events.map((e) => e.output_mode)).toEqual(['text', 'text', 'text', 'text']);
    expect(events.slice(0, 3).map((e) => e.choices[0].text).join('')).toBe('Onc');
    expect(events[3]).toEqual({ request_id: events[0].request_id, output_mode: 'text', choices: [], usage: expect.objectContaining({ completion_tokens: 3 }) });
  });

  it('aborts an in-flight request: 200 empty body at once, the request ends with finish_reason abort', async () => {
    const pending = post(built.fastify, '/inference/v1/generate', { token_ids: [1], sampling_params: { max_tokens: 200 }, request_id: 'long' });
    await waitFor(() => built.engine.inFlight.includes('generate-tokens-long'), 10_000, 'the request in flight');
    const abort = await post(built.fastify, '/inference/v1/abort_requests', { request_ids: ['generate-tokens-long'] });
    expect(abort.status).toBe(200);
    expect(abort.body).toBe('');
    const res = await pending;
    expect(res.json.choices[0].finish_reason).toBe('abort');
    expect(res.json.choices[0].token_ids.length).toBeLessThan(200);
  });

  it('answers 400 when request_ids is missing', async () => {
    const res = await post(built.fastify, '/inference/v1/abort_requests', {});
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'Bad Request', param: 'request_ids', code: 400 });
  });
});

describe('render and derender over HTTP', () => {
  let built: Built;
  beforeAll(async () => {
    built = await build({ enableScaleOut: true });
  });
  afterAll(async () => built.app.close());

  it('renders completions to one GenerateRequest per prompt, with token_offsets', async () => {
    const res = await post(built.fastify, '/v1/completions/render', { prompt: ['Hi', 'Yo!'], max_tokens: 4, temperature: 0, return_token_offsets: true });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(2);
    expect(res.json[0]).toMatchObject({ token_ids: [...Buffer.from('Hi')], token_offsets: [[0, 1], [1, 2]], output_mode: 'tokens', stream: false });
    expect(res.json[0].request_id).toMatch(/^cmpl-.+-0$/);
    expect(res.json[1].sampling_params).toMatchObject({ max_tokens: 4, temperature: 0, n: 1 });
  });

  it('renders chat with the assistant tokens mask from {% generation %} blocks', async () => {
    const res = await post(built.fastify, '/v1/chat/completions/render', {
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Yo' },
      ],
      add_generation_prompt: false,
      return_assistant_tokens_mask: true,
    });
    expect(res.status).toBe(200);
    const masked = res.json.token_ids.filter((_: number, i: number) => res.json.assistant_tokens_mask[i] === 1);
    expect(tokenizer.decode(masked, { skipSpecialTokens: false, spacesBetweenSpecialTokens: false })).toBe('Yo<|im_end|>');
    expect(res.json.assistant_tokens_mask).toHaveLength(res.json.token_ids.length);
    expect(res.json.request_id).toMatch(/^chatcmpl-/);
  });

  it('render → generate → derender gives the text generate gives in text mode', async () => {
    const [rendered] = (await post(built.fastify, '/v1/completions/render', { prompt: 'Hi', max_tokens: 6 })).json;
    const generated = (await post(built.fastify, '/inference/v1/generate', rendered)).json;
    const text = (await post(built.fastify, '/inference/v1/generate', { ...rendered, output_mode: 'text' })).json.choices[0].text;
    const derendered = await post(built.fastify, '/v1/completions/derender', {
      generate_responses: [generated],
      prompt_tokens: [rendered.token_ids.length],
      prompt_token_ids: [rendered.token_ids],
    });
    expect(derendered.status).toBe(200);
    expect(derendered.json).toMatchObject({ object: 'text_completion', id: generated.request_id, choices: [{ index: 0, text, finish_reason: 'length' }] });
    expect(derendered.json.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 6, total_tokens: 8 });
  });

  it('derender applies the original request\'s stop strings and stop tokens as the engine did', async () => {
    for (const stopCase of [{ stop: ['time'] }, { stop_token_ids: [SCRIPT[4]] }]) {
      const body = { prompt: 'Hi', max_tokens: 20, ...stopCase };
      const [rendered] = (await post(built.fastify, '/v1/completions/render', body)).json;
      const generated = (await post(built.fastify, '/inference/v1/generate', rendered)).json;
      const text = (await post(built.fastify, '/inference/v1/generate', { ...rendered, output_mode: 'text' })).json.choices[0].text;
      const derendered = await post(built.fastify, '/v1/completions/derender', {
        generate_responses: [generated],
        prompt_token_ids: [rendered.token_ids],
        completion_request: body,
      });
      expect(generated.choices[0].finish_reason).toBe('stop');
      expect(derendered.json.choices[0].text).toBe(text);
    }
  });

  it('derenders a stream chunk by chunk with the carried state', async () => {
    const rendered = (await post(built.fastify, '/v1/chat/completions/render', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, stream: true })).json;
    const events = sseEvents((await post(built.fastify, '/inference/v1/generate', rendered)).body);
    let state = null;
    let text = '';
    const roles: unknown[] = [];
    for (const chunk of events) {
      const res = await post(built.fastify, '/v1/chat/completions/derender', { stream: true, generate_chunk: chunk, stream_state: state, prompt_token_ids: rendered.token_ids });
      expect(res.status).toBe(200);
      state = res.json.stream_state;
      text += res.json.chunk.choices[0].delta.content;
      roles.push(res.json.chunk.choices[0].delta.role);
    }
    expect(text).toBe('Once ');
    expect(roles).toEqual(['assistant', undefined, undefined, undefined, undefined]);
  });

  it('refuses text-mode responses and inconsistent stream state with 400', async () => {
    const text = await post(built.fastify, '/v1/completions/derender', {
      generate_responses: [{ request_id: 'x', output_mode: 'text', choices: [{ index: 0, token_ids: [1], text: 'a' }] }],
    });
    expect(text.status).toBe(400);
    expect(text.json.error.message).toMatch(/already detokenized/);
    const bad = await post(built.fastify, '/v1/completions/derender', {
      stream: true,
      generate_chunk: { request_id: 'x', choices: [{ index: 0, token_ids: [65] }] },
      stream_state: { output_token_ids: [1, 2], output_chunk_lens: [1] },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe('stream_state.output_chunk_lens');
    expect((await post(built.fastify, '/v1/chat/completions/derender', { model: 'nope', generate_response: { request_id: 'x', choices: [] } })).status).toBe(404);
  });
});

describe('derender with --tool-call-parser hermes and --reasoning-parser deepseek_r1', () => {
  let built: Built;
  const OUTPUT = '<think>Need data.</think>Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';
  const chatRequest = { messages: [{ role: 'user', content: 'Weather?' }], tools: [{ type: 'function', function: { name: 'get_weather' } }] };
  const ids = () => tokenizer.encode(OUTPUT, { addSpecialTokens: false });
  beforeAll(async () => {
    built = await build({ enableScaleOut: true, enableAutoToolChoice: true, toolCallParser: 'hermes', reasoningParser: 'deepseek_r1' });
  });
  afterAll(async () => built.app.close());

  it('render reports reasoning_ended; generate starts a constraint after </think> unless reasoning_ended', async () => {
    const body = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, response_format: { type: 'json_object' } };
    const rendered = (await post(built.fastify, '/v1/chat/completions/render', body)).json;
    expect(rendered).toMatchObject({ reasoning_ended: false, reasoning_parser_kwargs: { chat_template_kwargs: {} } });
    for (const [reasoningEnded, after] of [[undefined, '</think>'], [false, '</think>'], [true, null]] as const) {
      await post(built.fastify, '/inference/v1/generate', { ...rendered, reasoning_ended: reasoningEnded });
      expect(built.engine.requests[built.engine.requests.length - 1].structuredOutputsAfter).toBe(after);
    }
  });

  it('parses a whole response as chat serving does', async () => {
    const res = await post(built.fastify, '/v1/chat/completions/derender', {
      generate_response: { request_id: 'r1', choices: [{ index: 0, token_ids: ids(), finish_reason: 'stop' }] },
      chat_request: chatRequest,
    });
    expect(res.status).toBe(200);
    expect(res.json.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { reasoning: 'Need data.', content: 'Checking.', tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } }] },
    });
    const missing = await post(built.fastify, '/v1/chat/completions/derender', { generate_response: { request_id: 'r1', choices: [{ index: 0, token_ids: ids() }] } });
    expect(missing.json.error).toMatchObject({ code: 400, param: 'chat_request' });
  });

  it('parses a stream chunk by chunk from the carried state: the same reasoning, content and call', async () => {
    const all = ids();
    let state = null;
    const deltas: any[] = [];
    let finish = null;
    for (let at = 0; at < all.length; at += 7) {
      const last = at + 7 >= all.length;
      const chunk = { request_id: 'r2', choices: [{ index: 0, token_ids: all.slice(at, at + 7), finish_reason: last ? 'stop' : null }] };
      const res = await post(built.fastify, '/v1/chat/completions/derender', { stream: true, generate_chunk: chunk, stream_state: state, prompt_token_ids: [1, 2], chat_request: chatRequest });
      expect(res.status).toBe(200);
      state = res.json.stream_state;
      deltas.push(res.json.chunk.choices[0].delta);
      finish = res.json.chunk.choices[0].finish_reason;
    }
    const join = (key: string) => deltas.map((d) => d[key] ?? '').join('');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect({ reasoning: join('reasoning'), content: join('content'), finish }).toEqual({ reasoning: 'Need data.', content: 'Checking.', finish: 'tool_calls' });
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(calls.map((c) => c.function.arguments ?? '').join('')).toBe('{"city": "Oslo"}');
  });
});
