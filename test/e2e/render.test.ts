// /v1/completions/render and /v1/chat/completions/render on a real server (stories260K,
// --enable-scale-out): the GenerateRequest shape, resolved sampling params, request ids,
// token_offsets, assistant_tokens_mask from {% generation %} blocks, and the errors.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';
import { defaultTestModel } from './completions-helpers';

const onModel = needs(defaultTestModel());

/** A chat template whose assistant turns are {% generation %} blocks (whitespace control included). */
const TEMPLATE =
  "{%- for m in messages -%}<|{{ m['role'] }}|>" +
  "{%- if m['role'] == 'assistant' -%}{%- generation -%} {{ m['content'] }}</s>{%- endgeneration -%}" +
  "{%- else -%} {{ m['content'] }}{%- endif %}\n{% endfor -%}" +
  "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}";

onModel.describe('render (stories260K)', () => {
  let server: TestServer;
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const decode = async (tokens: number[]): Promise<string> => (await post('/detokenize', { tokens })).json.prompt;

  beforeAll(async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ortllm-render-')), 'generation.jinja');
    writeFileSync(path, TEMPLATE);
    server = await startServer(['--enable-scale-out', '--chat-template', path, '--trust-request-chat-template']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it('renders a completion to a JSON array of GenerateRequests with the resolved sampling params', async () => {
    const res = await post('/v1/completions/render', { prompt: 'Once upon a time', temperature: 0, seed: 3 }, { 'x-request-id': 'r1' });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(1);
    const [request] = res.json;
    expect(request).toMatchObject({
      request_id: 'cmpl-r1',
      token_offsets: null,
      output_mode: 'tokens',
      stream: false,
      stream_options: null,
      priority: 0,
      cache_salt: null,
    });
    expect(await decode(request.token_ids)).toBe('Once upon a time');
    // The whole engine struct, max_tokens resolved to /v1/completions' default of 16.
    expect(request.sampling_params).toMatchObject({ max_tokens: 16, temperature: 0, seed: 3, n: 1, stop: [], detokenize: true, skip_special_tokens: true });
    expect(Object.keys(request.sampling_params)).toEqual(expect.arrayContaining(['top_k', 'min_p', 'logprobs', 'stop_token_ids', 'output_kind']));
  });

  it('gives each prompt its own request and keeps streaming options', async () => {
    const res = await post('/v1/completions/render', {
      prompt: [[1, 403, 407], [1, 450]],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
      cache_salt: 'salt',
    });
    expect(res.json.map((r: { request_id: string }) => r.request_id.replace(/^cmpl-[0-9a-f]+/, ''))).toEqual(['-0', '-1']);
    expect(res.json[0]).toMatchObject({ token_ids: [1, 403, 407], stream: true, stream_options: { include_usage: true }, cache_salt: 'salt' });
    expect(res.json[1].sampling_params.max_tokens).toBe(5);
  });

  it('carries vllm_xargs into sampling_params.extra_args, as vLLM does', async () => {
    const [request] = (await post('/v1/completions/render', { prompt: 'Once', vllm_xargs: { label: 'x', k: 2 } })).json;
    expect(request.sampling_params.extra_args).toEqual({ label: 'x', k: 2 });
    const [plain] = (await post('/v1/completions/render', { prompt: 'Once' })).json;
    expect(plain.sampling_params.extra_args).toBeNull();
  });

  it('returns token_offsets that cut the prompt text into its tokens', async () => {
    const text = 'Once upon a time, a cat sat.';
    const [request] = (await post('/v1/completions/render', { prompt: text, return_token_offsets: true })).json;
    const offsets: [number, number][] = request.token_offsets;
    expect(offsets).toHaveLength(request.token_ids.length);
    expect(offsets[0]).toEqual([0, 0]); // BOS covers no text
    expect(offsets.map(([a, b]) => text.slice(a, b)).join('')).toBe(text);
    for (let i = 1; i < offsets.length; i++) {
      expect(offsets[i][0]).toBe(offsets[i - 1][1]);
      // Each span is the token's own text (SentencePiece writes a leading space as '▁').
      expect((await decode([request.token_ids[i]])).trim()).toBe(text.slice(...offsets[i]).trim());
    }
  });

  it('renders chat to one GenerateRequest with the assistant tokens mask', async () => {
    const messages = [
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: 'Once upon a time' },
      { role: 'user', content: 'More' },
    ];
    const res = await post('/v1/chat/completions/render', { messages, return_assistant_tokens_mask: true, return_token_offsets: true, max_tokens: 7 });
    expect(res.status).toBe(200);
    const request = res.json;
    expect(request.request_id).toMatch(/^chatcmpl-/);
    expect(request.sampling_params.max_tokens).toBe(7);
    expect(request.assistant_tokens_mask).toHaveLength(request.token_ids.length);
    const masked = request.token_ids.filter((_: number, i: number) => request.assistant_tokens_mask[i] === 1);
    expect((await decode(masked)).trim()).toBe('Once upon a time');
    // Nothing outside the assistant turn is marked: the tokens before it decode to the user turn.
    const first = request.assistant_tokens_mask.indexOf(1);
    expect(await decode(request.token_ids.slice(0, first))).toContain('Hi there');
  });

  it('has no mask when the template has no generation blocks', async () => {
    const res = await post('/v1/chat/completions/render', {
      messages: [{ role: 'user', content: 'Hi' }],
      chat_template: "{% for m in messages %}{{ m['content'] }}{% endfor %}",
      return_assistant_tokens_mask: true,
    });
    expect(res.status).toBe(200);
    expect(res.json.assistant_tokens_mask).toBeNull();
  });

  it.each([
    ['beam search', '/v1/completions/render', { prompt: 'x', use_beam_search: true, n: 2 }, 400, 'Beam search is not supported by the render endpoint'],
    ['an unknown model', '/v1/chat/completions/render', { model: 'nope', messages: [{ role: 'user', content: 'x' }] }, 404, expect.stringMatching(/^The model `nope` does not exist\. Served model names: `.+`\.$/)],
    ['an empty prompt list', '/v1/completions/render', { prompt: [] }, 400, 'prompt cannot be empty.'],
  ])('answers an error for %s', async (_name, path, body, status, message) => {
    const res = await post(path, body);
    expect(res.status).toBe(status);
    expect(res.json.error).toMatchObject({ message, code: status });
  });
});
