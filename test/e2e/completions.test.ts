// /v1/completions against the real server on stories260K, through the official `openai` client.
// Each field has a test that would fail if the server ignored it.

import { defaultTestModel, SERVER_START_TIMEOUT_MS, expectApiError, sseFrames, startServing, type Serving } from './completions-helpers';
import { waitFor } from '../helpers/wait';
import { needs } from '../helpers/needs';

const PROMPT = 'Once upon a time';
const onModel = needs(defaultTestModel());

onModel.describe('POST /v1/completions', () => {
  let s: Serving;
  // Loosely typed so vLLM's extra fields can be sent as the Python client's extra_body would.
  const create = (body: Record<string, unknown>): Promise<any> => s.client.completions.create({ model: s.model, prompt: PROMPT, ...body });
  const greedy = (body: Record<string, unknown> = {}) => create({ temperature: 0, max_tokens: 8, ...body });

  beforeAll(async () => {
    s = await startServing(['--enable-prompt-tokens-details']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  describe('response envelope', () => {
    it('has vLLM\'s shape: cmpl- id, created, model, usage, system_fingerprint', async () => {
      const r = await greedy();
      expect(r.id).toMatch(/^cmpl-[0-9a-f]{32}$/);
      expect(r.object).toBe('text_completion');
      expect(Math.abs(r.created - Date.now() / 1000)).toBeLessThan(60);
      expect(r.model).toBe(s.model);
      expect(r.system_fingerprint).toBeNull();
      expect(r.choices).toHaveLength(1);
      expect(r.choices[0].finish_reason).toBe('length');
      expect(r.usage).toEqual({ prompt_tokens: 5, completion_tokens: 8, total_tokens: 13, prompt_tokens_details: { cached_tokens: expect.any(Number) } });
    });

    it('takes the id from X-Request-Id, else from the body request_id', async () => {
      const fromHeader = await s.client.completions.create({ model: s.model, prompt: PROMPT, max_tokens: 2, request_id: 'body-id' } as any, {
        headers: { 'X-Request-Id': 'header-id' },
      });
      expect(fromHeader.id).toBe('cmpl-header-id');
      const fromBody = await greedy({ max_tokens: 2, request_id: 'body-id' });
      expect(fromBody.id).toBe('cmpl-body-id');
      // Two requests with the same id at once both succeed (the engine ids are made unique).
      const same = await Promise.all([0, 1].map(() => greedy({ max_tokens: 30, ignore_eos: true, request_id: 'dup' })));
      expect(same.map((r) => r.id)).toEqual(['cmpl-dup', 'cmpl-dup']);
    });

    it('serves the model when `model` is omitted, and 404s an unknown one', async () => {
      const r = await s.post('/v1/completions', { prompt: PROMPT, max_tokens: 2 });
      expect(r.status).toBe(200);
      expect(r.json.model).toBe(s.model);
      await expectApiError(s.client.completions.create({ model: 'nope', prompt: PROMPT, max_tokens: 2 }), 404, 'model');
    });

    it('max_tokens defaults to 16', async () => {
      const r = await create({ temperature: 0, ignore_eos: true });
      expect(r.usage.completion_tokens).toBe(16);
    });

    it('accepts response_format text (no constraint)', async () => {
      expect((await greedy({ max_tokens: 1, response_format: { type: 'text' } })).choices).toHaveLength(1);
    });

    it('ignores unknown fields', async () => {
      const r = await greedy({ max_tokens: 2, no_such_field: { a: 1 } });
      expect(r.choices[0].text.length).toBeGreaterThan(0);
    });
  });

  describe('prompts', () => {
    it('takes string[], int[] and int[][] prompts; token ids give the same text as the string', async () => {
      const text = (await greedy()).choices[0].text;
      const tokens = (await s.post('/tokenize', { prompt: PROMPT })).json.tokens as number[];
      expect((await greedy({ prompt: tokens })).choices[0].text).toBe(text);
      const many = await greedy({ prompt: [PROMPT, 'The dog'] });
      expect(many.choices.map((c: any) => c.index)).toEqual([0, 1]);
      expect(many.choices[0].text).toBe(text);
      expect(many.choices[1].text).not.toBe(text);
      const dogTokens = (await s.post('/tokenize', { prompt: 'The dog' })).json.count as number;
      expect(many.usage.prompt_tokens).toBe(tokens.length + dogTokens);
      const manyIds = await greedy({ prompt: [tokens, tokens] });
      expect(manyIds.choices.map((c: any) => c.text)).toEqual([text, text]);
    });

    it('add_special_tokens: false drops BOS', async () => {
      const r = await greedy({ add_special_tokens: false, return_token_ids: true });
      expect(r.usage.prompt_tokens).toBe(4);
      expect(r.choices[0].prompt_token_ids[0]).not.toBe(1);
    });

    it('truncate_prompt_tokens keeps the last N tokens, or the first N with truncation_side right', async () => {
      const full = (await greedy({ return_token_ids: true })).choices[0].prompt_token_ids as number[];
      const left = await greedy({ truncate_prompt_tokens: 3, return_token_ids: true });
      expect(left.usage.prompt_tokens).toBe(3);
      expect(left.choices[0].prompt_token_ids).toEqual(full.slice(-3));
      const right = await greedy({ truncate_prompt_tokens: 3, truncation_side: 'right', return_token_ids: true });
      expect(right.choices[0].prompt_token_ids).toEqual(full.slice(0, 3));
    });

    it('echo prepends the prompt', async () => {
      const plain = (await greedy()).choices[0].text;
      const echoed = (await greedy({ echo: true })).choices[0].text;
      expect(echoed).toBe(PROMPT + plain);
    });
  });

  describe('sampling fields', () => {
    it('temperature 0 is deterministic; seed makes sampling repeatable', async () => {
      expect((await greedy()).choices[0].text).toBe((await greedy()).choices[0].text);
      const a = await create({ temperature: 1, seed: 7, max_tokens: 16 });
      const b = await create({ temperature: 1, seed: 7, max_tokens: 16 });
      expect(a.choices[0].text).toBe(b.choices[0].text);
      const texts = new Set<string>();
      for (const seed of [1, 2, 3, 4]) texts.add((await create({ temperature: 1.5, seed, max_tokens: 16 })).choices[0].text);
      expect(texts.size).toBeGreaterThan(1);
    });

    it('n returns n choices, different when sampling with a seed', async () => {
      const r = await create({ n: 3, temperature: 1.5, seed: 1, max_tokens: 12 });
      expect(r.choices.map((c: any) => c.index)).toEqual([0, 1, 2]);
      expect(new Set(r.choices.map((c: any) => c.text)).size).toBeGreaterThan(1);
      expect(r.usage.completion_tokens).toBe(3 * 12);
    });

    it('best_of samples more candidates but returns n', async () => {
      const r = await create({ n: 1, best_of: 3, temperature: 1, seed: 3, max_tokens: 6 });
      expect(r.choices).toHaveLength(1);
    });

    it('top_k 1, tiny top_p and min_p 1 all sample the greedy token', async () => {
      const text = (await greedy({ max_tokens: 12 })).choices[0].text;
      for (const extra of [{ top_k: 1 }, { top_p: 1e-6 }, { min_p: 1 }]) {
        const sampled = (await create({ temperature: 1, seed: 11, max_tokens: 12, ...extra })).choices[0].text;
        expect({ ...extra, text: sampled }).toEqual({ ...extra, text });
      }
    });

    it('presence, frequency and repetition penalties change a greedy continuation', async () => {
      const base = (await greedy({ max_tokens: 40 })).choices[0].text;
      for (const extra of [{ presence_penalty: 2 }, { frequency_penalty: 2 }, { repetition_penalty: 2 }]) {
        expect((await greedy({ max_tokens: 40, ...extra })).choices[0].text).not.toBe(base);
      }
    });

    it('logit_bias, allowed_token_ids and bad_words steer tokens', async () => {
      const biased = await greedy({ max_tokens: 4, logit_bias: { '403': 100 }, return_token_ids: true });
      expect(biased.choices[0].token_ids).toEqual([403, 403, 403, 403]);
      const allowed = await greedy({ max_tokens: 3, allowed_token_ids: [407], return_token_ids: true });
      expect(allowed.choices[0].token_ids).toEqual([407, 407, 407]);
      expect((await greedy()).choices[0].text).toContain(' little');
      expect((await greedy({ bad_words: [' little', 'little'] })).choices[0].text).not.toContain(' little');
    });

    it('stop strings end the text (cut unless include_stop_str_in_output) with stop_reason', async () => {
      const full = (await greedy({ max_tokens: 12 })).choices[0].text as string;
      expect(full).toContain(' was');
      const r = await greedy({ max_tokens: 12, stop: [' was'] });
      expect(r.choices[0]).toMatchObject({ text: full.slice(0, full.indexOf(' was')), finish_reason: 'stop', stop_reason: ' was' });
      const kept = await greedy({ max_tokens: 12, stop: ' was', include_stop_str_in_output: true });
      expect(kept.choices[0].text).toBe(full.slice(0, full.indexOf(' was') + 4));
    });

    it('stop_token_ids stop on a token; min_tokens holds it back', async () => {
      const ids = (await greedy({ return_token_ids: true })).choices[0].token_ids as number[];
      const r = await greedy({ stop_token_ids: [ids[2]], return_token_ids: true });
      expect(r.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: ids[2] });
      expect(r.usage.completion_tokens).toBe(3);
      const held = await greedy({ stop_token_ids: [ids[0]], min_tokens: 4, max_tokens: 6 });
      expect(held.usage.completion_tokens).toBeGreaterThanOrEqual(4);
    });

    it('EOS ends a request unless ignore_eos; skip_special_tokens / spaces_between_special_tokens shape the text', async () => {
      const eos = { logit_bias: { '2': 100 }, max_tokens: 3 };
      const stopped = await greedy(eos);
      expect(stopped.choices[0]).toMatchObject({ finish_reason: 'stop', text: '' });
      expect(stopped.usage.completion_tokens).toBe(1);
      const ignored = await greedy({ ...eos, ignore_eos: true });
      expect(ignored.usage.completion_tokens).toBe(3);
      expect(ignored.choices[0].text).toBe('');
      const shown = await greedy({ ...eos, ignore_eos: true, skip_special_tokens: false });
      const packed = await greedy({ ...eos, ignore_eos: true, skip_special_tokens: false, spaces_between_special_tokens: false });
      expect(packed.choices[0].text).toBe('</s></s></s>');
      expect(shown.choices[0].text).not.toBe(packed.choices[0].text);
      expect(shown.choices[0].text).toContain('</s>');
    });

    it('repetition_detection ends a looping request', async () => {
      const r = await greedy({
        max_tokens: 20,
        logit_bias: { '403': 100 },
        repetition_detection: { max_pattern_size: 2, min_pattern_size: 1, min_count: 3 },
      });
      expect(r.usage.completion_tokens).toBeLessThan(20);
      expect(r.choices[0].finish_reason).toBe('repetition');
    });

    it('use_beam_search returns the n best beams, best first', async () => {
      const r = await create({ use_beam_search: true, n: 2, temperature: 0, max_tokens: 6 });
      expect(r.choices).toHaveLength(2);
      expect(r.choices[0].text).not.toBe(r.choices[1].text);
      // length_penalty divides scores by length**penalty: a large one favours longer beams.
      const beams = (length_penalty: number) =>
        create({ use_beam_search: true, n: 2, temperature: 0, max_tokens: 24, stop: ['.'], length_penalty });
      const [plain, long] = await Promise.all([beams(1), beams(3)]);
      expect(long.choices[0].text.length).toBeGreaterThan(plain.choices[0].text.length);
    });
  });

  describe('logprobs', () => {
    it('logprobs: tokens / token_logprobs / top_logprobs / text_offset line up with the text', async () => {
      const r = await greedy({ logprobs: 2 });
      const lp = r.choices[0].logprobs;
      expect(lp.tokens).toHaveLength(8);
      expect(lp.tokens.join('')).toBe(r.choices[0].text);
      expect(lp.token_logprobs.every((x: number) => x <= 0)).toBe(true);
      expect(lp.top_logprobs.every((t: Record<string, number>) => Object.keys(t).length >= 2 && Object.keys(t).length <= 3)).toBe(true);
      lp.tokens.forEach((tok: string, i: number) => expect(lp.top_logprobs[i][tok]).toBeCloseTo(lp.token_logprobs[i], 6));
      let offset = 0;
      lp.tokens.forEach((tok: string, i: number) => {
        expect(lp.text_offset[i]).toBe(offset);
        offset += tok.length;
      });
    });

    it('echo with max_tokens 0 returns only the prompt and its logprobs (scoring)', async () => {
      const r = await create({ echo: true, max_tokens: 0, logprobs: 1 });
      expect(r.choices[0].text).toBe(PROMPT);
      expect(r.choices[0].logprobs.tokens).toHaveLength(5);
      expect(r.choices[0].logprobs.token_logprobs.slice(1).every((x: number) => x < 0)).toBe(true);
      expect(r.usage.completion_tokens).toBe(0);
      const streamed = sseFrames((await s.post('/v1/completions', { prompt: PROMPT, echo: true, max_tokens: 0, stream: true })).text);
      expect(streamed.map((f) => f.choices[0].text).join('')).toBe(PROMPT);
    });

    it('echo + logprobs covers the prompt tokens, the first with null', async () => {
      const r = await greedy({ logprobs: 1, echo: true, max_tokens: 3 });
      const lp = r.choices[0].logprobs;
      expect(lp.tokens).toHaveLength(5 + 3);
      expect(lp.token_logprobs[0]).toBeNull();
      expect(lp.top_logprobs[0]).toBeNull();
      expect(lp.token_logprobs[1]).toEqual(expect.any(Number));
    });

    it('return_tokens_as_token_ids names tokens "token_id:N"', async () => {
      const r = await greedy({ logprobs: 1, max_tokens: 3, return_tokens_as_token_ids: true, return_token_ids: true });
      expect(r.choices[0].logprobs.tokens).toEqual(r.choices[0].token_ids.map((id: number) => `token_id:${id}`));
    });

    it('logprob_token_ids reports exactly those tokens', async () => {
      const r = await greedy({ logprobs: 2, logprob_token_ids: [403, 407], max_tokens: 2, return_token_ids: true });
      for (const [i, top] of (r.choices[0].logprobs.top_logprobs as Record<string, number>[]).entries()) {
        const keys = Object.keys(top);
        expect(keys).toEqual(expect.arrayContaining([' Once', ' upon']));
        expect(keys.length).toBeLessThanOrEqual(3);
        expect(i).toBeLessThan(2);
      }
    });

    it('prompt_logprobs: one entry per prompt token, the first null', async () => {
      const r = await greedy({ prompt_logprobs: 1, max_tokens: 1 });
      const p = r.choices[0].prompt_logprobs;
      expect(p).toHaveLength(5);
      expect(p[0]).toBeNull();
      const entry = Object.values(p[1])[0] as any;
      expect(entry).toEqual({ logprob: expect.any(Number), rank: expect.any(Number), decoded_token: expect.any(String) });
    });
  });

  describe('vLLM request extras', () => {
    it('return_token_ids returns prompt and output ids', async () => {
      const r = await greedy({ return_token_ids: true });
      expect(r.choices[0].token_ids).toHaveLength(8);
      expect(r.choices[0].prompt_token_ids).toHaveLength(5);
      expect((await greedy()).choices[0].token_ids).toBeNull();
    });

    it('kv_transfer_params is accepted, and without a KV connector none is returned; vllm_xargs is checked', async () => {
      const r = await greedy({ max_tokens: 1, kv_transfer_params: { do_remote_decode: false } });
      expect(r.kv_transfer_params).toBeNull();
      expect((await greedy({ max_tokens: 1, vllm_xargs: { a: 1, b: 'x' } })).choices).toHaveLength(1);
      await expectApiError(greedy({ max_tokens: 1, vllm_xargs: { a: { nested: true } } }), 400, 'vllm_xargs');
    });

    it('priority needs --scheduling-policy priority', async () => {
      expect((await greedy({ max_tokens: 1, priority: 0 })).choices).toHaveLength(1);
      await expectApiError(greedy({ max_tokens: 1, priority: 5 }), 400, 'priority');
    });

    it('cache_salt keeps prefix-cache hits within one salt (cached_tokens)', async () => {
      const prompt = 'Once upon a time there was a little girl named Lily who loved to play with her big red ball in the park';
      const first = await greedy({ prompt, max_tokens: 1, cache_salt: 'salt-a' });
      expect(first.usage.prompt_tokens).toBeGreaterThan(16);
      const again = await greedy({ prompt, max_tokens: 1, cache_salt: 'salt-a' });
      expect(again.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
      const other = await greedy({ prompt, max_tokens: 1, cache_salt: 'salt-b' });
      expect(other.usage.prompt_tokens_details.cached_tokens).toBe(0);
    });
  });

  describe('streaming', () => {
    it('streams the same text as the non-streaming greedy request, then a usage chunk and [DONE]', async () => {
      const full = await greedy({ max_tokens: 12 });
      const stream = await s.client.completions.create({
        model: s.model, prompt: PROMPT, temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true },
      });
      let text = '';
      const chunks: any[] = [];
      for await (const chunk of stream) {
        chunks.push(chunk);
        text += chunk.choices[0]?.text ?? '';
      }
      expect(text).toBe(full.choices[0].text);
      expect(chunks.length).toBeGreaterThan(2);
      const last = chunks[chunks.length - 1];
      expect(last.choices).toEqual([]);
      expect(last.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 12, total_tokens: 17 });
      expect(chunks[chunks.length - 2].choices[0].finish_reason).toBe('length');
      expect(chunks.every((c) => c.id === chunks[0].id)).toBe(true);
    });

    it('a request the engine refuses is a plain JSON error, not a stream', async () => {
      const r = await s.post('/v1/completions', { prompt: PROMPT, max_tokens: 4, stream: true, priority: 3 });
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/json');
      expect(r.json.error).toMatchObject({ param: 'priority', code: 400 });
    });

    it('continuous_usage_stats puts usage on every chunk; no stream_options = no usage', async () => {
      const r = await s.post('/v1/completions', {
        prompt: PROMPT, max_tokens: 4, temperature: 0, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true },
      });
      const frames = sseFrames(r.text);
      expect(frames.every((f) => f.usage && f.usage.prompt_tokens === 5)).toBe(true);
      const plain = sseFrames((await s.post('/v1/completions', { prompt: PROMPT, max_tokens: 4, stream: true })).text);
      expect(plain.some((f) => f.usage)).toBe(false);
    });

    it('streams n choices by index, echo and logprobs included', async () => {
      const r = await s.post('/v1/completions', {
        prompt: PROMPT, max_tokens: 4, temperature: 1, seed: 5, n: 2, stream: true, echo: true, logprobs: 1,
      });
      const frames = sseFrames(r.text);
      const texts = ['', ''];
      for (const f of frames) for (const c of f.choices) texts[c.index] += c.text;
      expect(texts.every((t) => t.startsWith(PROMPT))).toBe(true);
      expect(frames.every((f) => f.choices[0].logprobs)).toBe(true);
    });

    it('a client that disconnects mid-stream aborts its request', async () => {
      await s.expectDisconnectAborts('/v1/completions', { prompt: PROMPT, max_tokens: 1500, ignore_eos: true });
    });
  });

  it('a non-streaming request whose client goes away is aborted too', async () => {
    const aborted = () => s.metric('vllm:request_success_total', 'finished_reason="abort"');
    const before = await aborted();
    const controller = new AbortController();
    const pending = fetch(`${s.server.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: PROMPT, max_tokens: 2000, ignore_eos: true }),
      signal: controller.signal,
    }).catch((err: { name: string }) => err.name);
    await waitFor(async () => (await s.metric('vllm:num_requests_running')) === 1, 5_000);
    controller.abort();
    expect(await pending).toBe('AbortError');
    await waitFor(async () => (await aborted()) === before + 1);
    expect(await s.metric('vllm:num_requests_running')).toBe(0);
  });

  describe('validation errors (status, type, param)', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['temperature < 0', { temperature: -1 }, 'temperature'],
      ['top_p 0', { top_p: 0 }, 'top_p'],
      ['top_k -2', { top_k: -2 }, 'top_k'],
      ['min_p > 1', { min_p: 2 }, 'min_p'],
      ['presence_penalty 3', { presence_penalty: 3 }, 'presence_penalty'],
      ['frequency_penalty -3', { frequency_penalty: -3 }, 'frequency_penalty'],
      ['repetition_penalty 0', { repetition_penalty: 0 }, 'repetition_penalty'],
      ['n 0', { n: 0 }, 'n'],
      ['best_of < n', { n: 3, best_of: 2, temperature: 1 }, 'best_of'],
      ['logprobs 21', { logprobs: 21 }, 'logprobs'],
      ['prompt_logprobs 21', { prompt_logprobs: 21 }, 'prompt_logprobs'],
      ['max_tokens 0', { max_tokens: 0 }, 'max_tokens'],
      ['min_tokens > max_tokens', { min_tokens: 9, max_tokens: 4 }, 'min_tokens'],
      ['empty stop string', { stop: [''] }, 'stop'],
      ['stop token outside the vocabulary', { stop_token_ids: [100000] }, 'stop_token_ids'],
      ['prompt token outside the vocabulary', { prompt: [1, 100000] }, 'prompt'],
      ['empty prompt list', { prompt: [] }, 'prompt'],
      ['empty prompt', { prompt: '', add_special_tokens: false }, 'prompt'],
      ['truncate_prompt_tokens over max_model_len', { truncate_prompt_tokens: 100000 }, 'truncate_prompt_tokens'],
      ['suffix', { suffix: 'x' }, 'suffix'],
      ['response_format beside structured_outputs', { response_format: { type: 'json_object' }, structured_outputs: { regex: 'a' } }, 'response_format'],
      ['structured_outputs with an empty choice', { structured_outputs: { choice: [] } }, 'structured_outputs'],
      ['prompt_embeds', { prompt_embeds: 'AAAA' }, 'prompt_embeds'],
      ['prompt_logprobs with stream', { prompt_logprobs: 1, stream: true }, 'prompt_logprobs'],
    ];
    it.each(cases)('%s -> 400', async (_name, body, param) => {
      await expectApiError(create({ max_tokens: 4, ...body }), 400, param);
    });

    it('max_tokens beyond the context names both numbers', async () => {
      const err = await expectApiError(create({ max_tokens: 5000 }), 400, 'max_tokens');
      expect(err.message).toContain('5000');
      expect(err.message).toContain('2048');
      expect(err.message).toContain('5 input tokens');
    });

    it('a prompt longer than the context is refused', async () => {
      const prompt = Array.from({ length: 2100 }, () => 403);
      await expectApiError(create({ prompt, max_tokens: 1 }), 400, 'prompt');
    });

    it('wrong types are 400 "Bad Request" naming the field', async () => {
      const r = await s.post('/v1/completions', { prompt: 5 });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'Bad Request', param: 'prompt', code: 400 });
      const t = await s.post('/v1/completions', { prompt: PROMPT, temperature: 'hot' });
      expect(t.json.error).toMatchObject({ type: 'Bad Request', param: 'temperature' });
    });
  });
});
