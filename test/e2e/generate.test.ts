// /inference/v1/generate and /inference/v1/abort_requests on a real server (stories260K,
// --enable-scale-out): response and chunk shapes in both output modes, logprob shapes, request
// ids, every 400/404, usage options, and abort of an in-flight request.

import { defaultTestModel, SERVER_START_TIMEOUT_MS, sseFrames, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());
// Long enough that a streamed generation is still running when a test disconnects or aborts it,
// even on a loaded machine (the engine runs in its own thread, so it keeps going while the HTTP
// thread is slow to notice the client left).
const MAX_MODEL_LEN = 1024;

onModel.describe('POST /inference/v1/generate (stories260K)', () => {
  let s: Serving;
  let prompt: number[];
  const generate = (body: Record<string, unknown>, headers?: Record<string, string>) => s.post('/inference/v1/generate', body, headers);

  beforeAll(async () => {
    s = await startServing(['--enable-scale-out', '--max-model-len', String(MAX_MODEL_LEN), '--max-num-seqs', '4']);
    prompt = (await s.post('/tokenize', { prompt: 'Once upon a time' })).json.tokens;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it('returns token ids in tokens mode, the same tokens /v1/completions samples greedily', async () => {
    const res = await generate({ token_ids: prompt, sampling_params: { max_tokens: 8, temperature: 0 } });
    expect(res.status).toBe(200);
    const completion = await s.client.completions.create({ model: s.model, prompt, max_tokens: 8, temperature: 0, return_token_ids: true } as never);
    const body = res.json;
    expect(body).toEqual({
      request_id: expect.stringMatching(/^generate-tokens-[0-9a-f]{32}$/),
      output_mode: 'tokens',
      model: s.model,
      created: expect.any(Number),
      choices: [
        {
          index: 0,
          finish_reason: 'length',
          token_ids: (completion.choices[0] as unknown as { token_ids: number[] }).token_ids,
          logprobs: null,
          routed_experts: null,
          sampling_mask: null,
          weight_versions: [{ version: 'default', start: 0, end: 8 }],
        },
      ],
      usage: { prompt_tokens: prompt.length, completion_tokens: 8, total_tokens: prompt.length + 8, prompt_tokens_details: null },
      prompt_logprobs: null,
      prompt_token_ids: null,
      mm_placeholders: null,
      metrics: null,
      kv_transfer_params: null,
      ec_transfer_params: null,
    });
  });

  it('adds the text in text mode: what /v1/completions returns; a stop string is cut from text but not from token_ids', async () => {
    const completion = await s.client.completions.create({ model: s.model, prompt, max_tokens: 10, temperature: 0 });
    const res = await generate({ token_ids: prompt, sampling_params: { max_tokens: 10, temperature: 0 }, output_mode: 'text' });
    expect(res.json.output_mode).toBe('text');
    expect(res.json.choices[0].text).toBe(completion.choices[0].text);

    const stop = completion.choices[0].text.split(' ').slice(2, 3).join('');
    const stopped = await generate({ token_ids: prompt, sampling_params: { max_tokens: 10, temperature: 0, stop: [stop] }, output_mode: 'text' });
    const choice = stopped.json.choices[0];
    expect(choice.finish_reason).toBe('stop');
    expect(choice.text).toBe(completion.choices[0].text.slice(0, completion.choices[0].text.indexOf(stop)));
    const decoded = (await s.post('/detokenize', { tokens: choice.token_ids })).json.prompt;
    expect(decoded).toContain(stop);
  });

  it('builds the request id from X-Request-Id, else the body request_id', async () => {
    const byHeader = await generate({ token_ids: prompt, sampling_params: { max_tokens: 1 }, request_id: 'body-id' }, { 'x-request-id': 'hdr-id' });
    expect(byHeader.json.request_id).toBe('generate-tokens-hdr-id');
    const byBody = await generate({ token_ids: prompt, sampling_params: { max_tokens: 1 }, request_id: 'body-id' });
    expect(byBody.json.request_id).toBe('generate-tokens-body-id');
  });

  it('generates up to the context limit when max_tokens is absent', async () => {
    const res = await generate({ token_ids: prompt, sampling_params: { ignore_eos: true, temperature: 0 } });
    expect(res.json.usage.completion_tokens).toBe(MAX_MODEL_LEN - prompt.length);
    expect(res.json.choices[0].finish_reason).toBe('length');
  });

  it('tokens-mode logprobs carry token_id, logprob and rank, the sampled token first', async () => {
    const res = await generate({ token_ids: prompt, sampling_params: { max_tokens: 3, temperature: 0, logprobs: 3 } });
    const content = res.json.choices[0].logprobs.content;
    expect(content.map((c: { token_id: number }) => c.token_id)).toEqual(res.json.choices[0].token_ids);
    for (const entry of content) {
      expect(Object.keys(entry).sort()).toEqual(['logprob', 'rank', 'token_id', 'top_logprobs']);
      expect(entry.rank).toBe(1); // greedy: the sampled token is the most likely one
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0]).toEqual({ token_id: entry.token_id, logprob: entry.logprob, rank: 1 });
      expect(entry.top_logprobs.map((t: { rank: number }) => t.rank)).toEqual([1, 2, 3]);
      expect(Object.keys(entry.top_logprobs[1]).sort()).toEqual(['logprob', 'rank', 'token_id']);
    }
  });

  it('text-mode logprobs carry the decoded token and its UTF-8 bytes', async () => {
    const res = await generate({ token_ids: prompt, sampling_params: { max_tokens: 3, temperature: 0, logprobs: 2 }, output_mode: 'text' });
    const content = res.json.choices[0].logprobs.content;
    expect(content.map((c: { token: string }) => c.token).join('')).toBe(res.json.choices[0].text);
    for (const entry of content) {
      expect(entry.bytes).toEqual([...Buffer.from(entry.token)]);
      expect(entry.top_logprobs).toHaveLength(2);
      for (const top of entry.top_logprobs) expect(top.bytes).toEqual([...Buffer.from(top.token)]);
    }
  });

  it('streams token deltas with usage options and prompt ids on the first chunk', async () => {
    const whole = await generate({ token_ids: prompt, sampling_params: { max_tokens: 6, temperature: 0 } });
    const res = await generate({
      token_ids: prompt,
      sampling_params: { max_tokens: 6, temperature: 0 },
      stream: true,
      return_token_ids: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const frames = sseFrames(res.text);
    const final = frames.pop();
    expect(final).toEqual({
      request_id: frames[0].request_id,
      output_mode: 'tokens',
      choices: [],
      usage: { prompt_tokens: prompt.length, completion_tokens: 6, total_tokens: prompt.length + 6, prompt_tokens_details: null },
    });
    expect(frames.flatMap((f) => f.choices[0].token_ids)).toEqual(whole.json.choices[0].token_ids);
    expect(frames.every((f) => f.output_mode === 'tokens' && f.choices.length === 1)).toBe(true);
    expect(frames[0].prompt_token_ids).toEqual(prompt);
    expect(frames.slice(1).every((f) => f.prompt_token_ids === null)).toBe(true);
    expect(frames[frames.length - 1].usage.completion_tokens).toBe(6);
    expect(frames[frames.length - 1].choices[0].finish_reason).toBe('length');
    expect(frames[frames.length - 1].choices[0].weight_versions).toEqual([{ version: 'default', start: 0, end: 6 }]);
    expect(frames[0].choices[0].weight_versions).toBeNull();
  });

  it('streams text deltas that add up to the non-streaming text', async () => {
    const whole = await generate({ token_ids: prompt, sampling_params: { max_tokens: 12, temperature: 0, stop: ['little'] }, output_mode: 'text' });
    const frames = sseFrames((await generate({ token_ids: prompt, sampling_params: { max_tokens: 12, temperature: 0, stop: ['little'] }, output_mode: 'text', stream: true })).text);
    expect(frames.every((f) => f.output_mode === 'text')).toBe(true);
    expect(frames.map((f) => f.choices[0].text).join('')).toBe(whole.json.choices[0].text);
    expect(frames[frames.length - 1].choices[0].finish_reason).toBe(whole.json.choices[0].finish_reason);
  });

  it('accepts kv_transfer_params without a KV connector and returns none (vLLM: no echo)', async () => {
    const res = await generate({ token_ids: prompt, sampling_params: { max_tokens: 1 }, kv_transfer_params: { do_remote_decode: true, remote_port: 7 } });
    expect(res.status).toBe(200);
    expect(res.json.kv_transfer_params).toBeNull();
  });

  it.each([
    ['empty token_ids', { token_ids: [], sampling_params: {} }, 'token_ids'],
    ['negative token_ids', { token_ids: [1, -5], sampling_params: {} }, 'token_ids'],
    ['an unsupported output_mode', { token_ids: [1], sampling_params: {}, output_mode: 'words' }, 'output_mode'],
  ])('answers 400 for %s', async (_name, body, param) => {
    const res = await generate(body);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param, code: 400, type: 'Bad Request' });
  });

  it('answers 400 for text mode with detokenize false, and for n over max_num_seqs', async () => {
    const text = await generate({ token_ids: prompt, sampling_params: { detokenize: false }, output_mode: 'text' });
    expect(text.status).toBe(400);
    expect(text.json.error).toMatchObject({ param: 'sampling_params.detokenize', type: 'BadRequestError' });
    const n = await generate({ token_ids: prompt, sampling_params: { n: 5, temperature: 1 } });
    expect(n.status).toBe(400);
    expect(n.json.error.message).toBe("sampling_params.n must be at most the server's max_num_seqs (4), got 5.");
  });

  it('answers 404 for an unknown model', async () => {
    const res = await generate({ token_ids: prompt, sampling_params: {}, model: 'no-such-model' });
    expect(res.status).toBe(404);
    expect(res.json.error).toMatchObject({ message: expect.stringMatching(/^The model `no-such-model` does not exist\. Served model names: /), type: 'NotFoundError', code: 404 });
  });

  it('aborts an in-flight streaming request: 200 empty body, the stream ends with finish_reason abort', async () => {
    const response = fetch(`${s.server.baseUrl}/inference/v1/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'to-abort' },
      body: JSON.stringify({ token_ids: prompt, sampling_params: { ignore_eos: true, temperature: 0 }, stream: true, output_mode: 'text' }),
    });
    const reader = (await response).body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    const abort = await s.post('/inference/v1/abort_requests', { request_ids: ['generate-tokens-to-abort'] });
    expect(abort.status).toBe(200);
    expect(abort.text).toBe('');
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    const frames = sseFrames(text);
    const last = frames[frames.length - 1].choices[0];
    expect(last.finish_reason).toBe('abort');
    expect(frames.reduce((n, f) => n + f.choices[0].token_ids.length, 0)).toBeLessThan(MAX_MODEL_LEN - prompt.length);
  });

  it('aborts the engine request when a streaming client disconnects', async () => {
    await s.expectDisconnectAborts('/inference/v1/generate', { token_ids: prompt, sampling_params: { ignore_eos: true }, output_mode: 'text' });
  });

  it('answers 400 for an abort without request_ids', async () => {
    const res = await s.post('/inference/v1/abort_requests', { ids: ['x'] });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param: 'request_ids', type: 'Bad Request', code: 400 });
  });
});
