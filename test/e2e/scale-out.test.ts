// Disaggregated serving with two real processes on loopback: an ortllm with --enable-scale-out
// renders and derenders, an ortllm with --tokens-only (no tokenizer) generates. render →
// generate → derender must give what /v1/completions and /v1/chat/completions give on a
// single server, streaming and not. Also the tokens-only server's own rules.

import { SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';
import { defaultTestModel, postJson, sseFrames, startServing, type Serving } from './completions-helpers';

const onModel = needs(defaultTestModel());
const GEN_KEY = 'generator-key';

onModel.describe('render → generate → derender across two servers (stories260K)', () => {
  let renderer: Serving;
  let generator: TestServer;

  const gen = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${GEN_KEY}` }) =>
    postJson(generator.baseUrl, path, body, headers);

  beforeAll(async () => {
    [renderer, generator] = await Promise.all([
      startServing(['--enable-scale-out', '--return-tokens-as-token-ids']),
      startServer(['--tokens-only', '--api-key', GEN_KEY]),
    ]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all([renderer?.server.stop(), generator?.stop()]);
  });

  it('completions, not streaming: the same choices and usage as /v1/completions', async () => {
    const request = { model: renderer.model, prompt: ['Once upon a time', 'The little dog'], max_tokens: 12, temperature: 0 };
    const single = (await renderer.post('/v1/completions', request)).json;

    const rendered = await renderer.post('/v1/completions/render', request);
    expect(rendered.status).toBe(200);
    expect(rendered.json).toHaveLength(2);
    const generated = [];
    for (const generateRequest of rendered.json) {
      const res = await gen('/inference/v1/generate', generateRequest);
      expect(res.status).toBe(200);
      expect(res.json.output_mode).toBe('tokens');
      generated.push(res.json);
    }
    const derendered = await renderer.post('/v1/completions/derender', {
      generate_responses: generated,
      prompt_tokens: rendered.json.map((r: { token_ids: number[] }) => r.token_ids.length),
      prompt_token_ids: rendered.json.map((r: { token_ids: number[] }) => r.token_ids),
      completion_request: request,
    });
    expect(derendered.status).toBe(200);
    expect(derendered.json.object).toBe('text_completion');
    expect(derendered.json.id).toBe(generated[0].request_id);
    expect(derendered.json.choices.map((c: { index: number; text: string; finish_reason: string }) => [c.index, c.text, c.finish_reason])).toEqual(
      single.choices.map((c: { index: number; text: string; finish_reason: string }) => [c.index, c.text, c.finish_reason]),
    );
    expect(derendered.json.usage).toEqual(single.usage);
  });

  it('completions, streaming: the derendered deltas add up to the /v1/completions stream', async () => {
    const request = { model: renderer.model, prompt: 'Once upon a time', max_tokens: 14, temperature: 0, stream: true };
    const singleFrames = sseFrames((await renderer.post('/v1/completions', request)).text);
    const singleText = singleFrames.map((f) => f.choices[0]?.text ?? '').join('');

    const [rendered] = (await renderer.post('/v1/completions/render', request)).json;
    expect(rendered.stream).toBe(true);
    const chunks = sseFrames((await gen('/inference/v1/generate', rendered)).text);
    let state = null;
    let text = '';
    for (const chunk of chunks) {
      const res = await renderer.post('/v1/completions/derender', {
        stream: true,
        generate_chunk: chunk,
        stream_state: state,
        prompt_tokens: rendered.token_ids.length,
        prompt_token_ids: rendered.token_ids,
        completion_request: request,
      });
      expect(res.status).toBe(200);
      expect(res.json.chunk.object).toBe('text_completion');
      state = res.json.stream_state;
      text += res.json.chunk.choices[0].text;
    }
    expect(text).toBe(singleText);
    const whole = (await renderer.client.completions.create({ model: renderer.model, prompt: 'Once upon a time', max_tokens: 14, temperature: 0 })).choices[0].text;
    expect(text).toBe(whole);
  });

  it('chat, streaming and not: the same content as /v1/chat/completions', async () => {
    const request = { model: renderer.model, messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 12, temperature: 0 };
    const single = await renderer.client.chat.completions.create(request as never);
    const rendered = (await renderer.post('/v1/chat/completions/render', request)).json;
    expect(rendered.request_id).toMatch(/^chatcmpl-/);
    const generated = (await gen('/inference/v1/generate', rendered)).json;
    const derendered = await renderer.post('/v1/chat/completions/derender', {
      generate_response: generated,
      prompt_tokens: rendered.token_ids.length,
      prompt_token_ids: rendered.token_ids,
      chat_request: request,
    });
    expect(derendered.status).toBe(200);
    expect(derendered.json.choices[0].message).toMatchObject({ role: 'assistant', content: single.choices[0].message.content });
    expect(derendered.json.usage).toMatchObject({ prompt_tokens: single.usage!.prompt_tokens, completion_tokens: single.usage!.completion_tokens });

    const streamRendered = (await renderer.post('/v1/chat/completions/render', { ...request, stream: true })).json;
    const chunks = sseFrames((await gen('/inference/v1/generate', streamRendered)).text);
    let state = null;
    let content = '';
    for (const chunk of chunks) {
      const res = await renderer.post('/v1/chat/completions/derender', { stream: true, generate_chunk: chunk, stream_state: state, prompt_token_ids: streamRendered.token_ids });
      state = res.json.stream_state;
      content += res.json.chunk.choices[0].delta.content;
    }
    expect(content).toBe(single.choices[0].message.content);
  });

  it('derender refuses output_mode text responses (already detokenized)', async () => {
    const [rendered] = (await renderer.post('/v1/completions/render', { prompt: 'Once', max_tokens: 3 })).json;
    const textResponse = (await renderer.post('/inference/v1/generate', { ...rendered, output_mode: 'text' })).json;
    expect(textResponse.output_mode).toBe('text');
    const res = await renderer.post('/v1/completions/derender', { generate_responses: [textResponse] });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toMatch(/already detokenized/);
  });

  it('--return-tokens-as-token-ids makes text-mode logprobs token_id:N', async () => {
    const [rendered] = (await renderer.post('/v1/completions/render', { prompt: 'Once', max_tokens: 2, temperature: 0 })).json;
    const res = await renderer.post('/inference/v1/generate', { ...rendered, output_mode: 'text', sampling_params: { ...rendered.sampling_params, logprobs: 1 } });
    const content = res.json.choices[0].logprobs.content;
    expect(content.map((c: { token: string }) => c.token)).toEqual(res.json.choices[0].token_ids.map((id: number) => `token_id:${id}`));
  });

  describe('the --tokens-only generator', () => {
    it('has no text routes and refuses output_mode text and stop strings', async () => {
      expect((await gen('/v1/completions', { prompt: 'x' })).status).toBe(404);
      expect((await gen('/v1/completions/render', { prompt: 'x' })).status).toBe(404);
      const text = await gen('/inference/v1/generate', { token_ids: [1, 403], sampling_params: { max_tokens: 2 }, output_mode: 'text' });
      expect(text.status).toBe(400);
      expect(text.json.error).toMatchObject({ param: 'output_mode', code: 400 });
      const stop = await gen('/inference/v1/generate', { token_ids: [1, 403], sampling_params: { max_tokens: 2, stop: ['.'] } });
      expect(stop.status).toBe(400);
      expect(stop.json.error.param).toBe('sampling_params.stop');
      expect((await gen('/inference/v1/generate', { token_ids: [1, 403], sampling_params: { max_tokens: 2, stop_token_ids: [2] } })).status).toBe(200);
    });

    it('needs the key for generate and abort, but not for the legacy POST /abort_requests', async () => {
      expect((await gen('/inference/v1/generate', { token_ids: [1], sampling_params: { max_tokens: 1 } }, {})).status).toBe(401);
      expect((await gen('/inference/v1/abort_requests', { request_ids: ['generate-tokens-x'] }, {})).status).toBe(401);
      const legacy = await gen('/abort_requests', { request_ids: ['generate-tokens-x'] }, {});
      expect(legacy.status).toBe(200);
      expect(legacy.text).toBe('');
      expect((await gen('/abort_requests', {}, {})).status).toBe(400);
    });

    it('aborts an in-flight request through the legacy path', async () => {
      const pending = gen('/inference/v1/generate', { token_ids: [1, 403], sampling_params: { ignore_eos: true }, request_id: 'legacy-abort' });
      // Without max_tokens it may run to the end of the context: abort it once the engine runs it.
      const running = async () => {
        const metrics = await (await fetch(`${generator.baseUrl}/metrics`, { headers: { authorization: `Bearer ${GEN_KEY}` } })).text();
        return /^vllm:num_requests_running\{[^}]*\} [1-9]/m.test(metrics);
      };
      await waitFor(running, 10_000, 'the request running in the engine');
      expect((await gen('/abort_requests', { request_ids: ['generate-tokens-legacy-abort'] }, {})).status).toBe(200);
      const res = await pending;
      expect(res.json.choices[0].finish_reason).toBe('abort');
      const models = await fetch(`${generator.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${GEN_KEY}` } });
      const maxModelLen = ((await models.json()) as { data: Array<{ max_model_len: number }> }).data[0].max_model_len;
      expect(res.json.usage.completion_tokens).toBeLessThan(maxModelLen - 2);
    });
  });
});
