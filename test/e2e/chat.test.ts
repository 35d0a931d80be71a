// /v1/chat/completions and /v1/chat/completions/batch against the real server on stories260K
// with a ChatML-like template (--chat-template), through the official `openai` client.

import { defaultTestModel, SERVER_START_TIMEOUT_MS, expectApiError, sseFrames, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());
const USER = [{ role: 'user', content: 'Tell me a story about a dog.' }];
const RENDERED = '<|user|>Tell me a story about a dog.\n<|assistant|>';

onModel.describe('POST /v1/chat/completions', () => {
  let s: Serving;
  const chat = (body: Record<string, unknown> = {}): Promise<any> =>
    s.client.chat.completions.create({ model: s.model, messages: USER, temperature: 0, max_tokens: 8, ...body } as any);

  beforeAll(async () => {
    // A short context keeps the run-to-the-limit test quick; compact JSON keeps constrained output short.
    s = await startServing(['--max-model-len', '512', '--structured-outputs-config', '{"disable_any_whitespace": true}']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  describe('response envelope', () => {
    it('has vLLM\'s shape', async () => {
      const r = await chat({ return_prompt_text: true });
      expect(r.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
      expect(r.object).toBe('chat.completion');
      expect(r.model).toBe(s.model);
      expect(r.system_fingerprint).toBeNull();
      expect(r.choices[0].message).toMatchObject({ role: 'assistant', content: expect.any(String), tool_calls: [] });
      expect(r.choices[0].finish_reason).toBe('length');
      expect(r.prompt_text).toBe(RENDERED);
      expect(r.usage.completion_tokens).toBe(8);
      expect(r.usage.total_tokens).toBe(r.usage.prompt_tokens + 8);
    });

    it('takes the id from X-Request-Id or request_id', async () => {
      const r = await s.client.chat.completions.create({ model: s.model, messages: USER, max_tokens: 1 } as any, { headers: { 'X-Request-Id': 'abc' } });
      expect(r.id).toBe('chatcmpl-abc');
      expect((await chat({ max_tokens: 1, request_id: 'xyz' })).id).toBe('chatcmpl-xyz');
    });

    it('text-part content renders like string content; system and tool roles are accepted', async () => {
      const parts = await chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a story' }, { type: 'text', text: 'about a dog.' }] }], return_prompt_text: true });
      expect(parts.prompt_text).toBe('<|user|>Tell me a story\nabout a dog.\n<|assistant|>');
      const roles = await chat({
        messages: [{ role: 'system', content: 'Be kind.' }, ...USER, { role: 'assistant', content: 'Ok.' }, { role: 'tool', content: '42', tool_call_id: 't1' }, ...USER],
        return_prompt_text: true,
      });
      expect(roles.prompt_text).toContain('<|system|>Be kind.\n');
      expect(roles.prompt_text).toContain('<|tool|>42\n');
    });
  });

  describe('template fields', () => {
    it('add_generation_prompt false leaves the generation prompt out', async () => {
      const r = await chat({ add_generation_prompt: false, return_prompt_text: true, max_tokens: 1 });
      expect(r.prompt_text).toBe('<|user|>Tell me a story about a dog.\n');
    });

    it('continue_final_message continues the last assistant message; echo prepends it', async () => {
      const messages = [...USER, { role: 'assistant', content: 'Once upon a time' }];
      const r = await chat({ messages, add_generation_prompt: false, continue_final_message: true, return_prompt_text: true, echo: true });
      expect(r.prompt_text).toBe(`${RENDERED.replace('<|assistant|>', '')}<|assistant|>Once upon a time`);
      expect(r.choices[0].message.content.startsWith('Once upon a time')).toBe(true);
      const plain = await chat({ messages, add_generation_prompt: false, continue_final_message: true });
      expect(r.choices[0].message.content).toBe(`Once upon a time${plain.choices[0].message.content}`);
    });

    it('continue_final_message with add_generation_prompt (its default) is a 400', async () => {
      await expectApiError(chat({ continue_final_message: true }), 400, 'continue_final_message');
    });

    it('documents and chat_template_kwargs reach the template', async () => {
      const r = await chat({
        documents: [{ title: 'Dogs', text: 'Dogs bark.' }],
        chat_template_kwargs: { greeting: 'Hello there' },
        return_prompt_text: true,
        max_tokens: 1,
      });
      // Templates render with trim_blocks, as transformers does: no newline after a block tag.
      expect(r.prompt_text).toBe('<|user|>Tell me a story about a dog.\n<|documents|>Dogs: Dogs bark. Hello there\n<|assistant|>');
    });

    it('a per-request chat_template needs --trust-request-chat-template', async () => {
      await expectApiError(chat({ chat_template: '{{ messages[0].content }}' }), 400, 'chat_template');
    });

    it('add_special_tokens adds BOS on top of the template', async () => {
      const plain = await chat({ max_tokens: 1 });
      const withBos = await chat({ max_tokens: 1, add_special_tokens: true });
      expect(withBos.usage.prompt_tokens).toBe(plain.usage.prompt_tokens + 1);
    });
  });

  describe('sampling and lengths', () => {
    it('max_completion_tokens wins over max_tokens', async () => {
      const r = await chat({ max_tokens: 3, max_completion_tokens: 5, ignore_eos: true });
      expect(r.usage.completion_tokens).toBe(5);
    });

    it('without a limit, generation runs to the context length', async () => {
      const r = await s.client.chat.completions.create({ model: s.model, messages: USER, temperature: 0, ignore_eos: true } as any);
      expect(r.usage?.total_tokens).toBe(512);
      expect(r.choices[0].finish_reason).toBe('length');
    });

    it('too many tokens names the field the client used and both numbers', async () => {
      const err = await expectApiError(chat({ max_tokens: undefined, max_completion_tokens: 4000 }), 400, 'max_completion_tokens');
      expect(err.message).toMatch(/4000 > 512 - \d+/);
      await expectApiError(chat({ max_tokens: 4000 }), 400, 'max_tokens');
    });

    it('n, seed and stop', async () => {
      const a = await chat({ n: 2, temperature: 1, seed: 9, max_tokens: 10 });
      const b = await chat({ n: 2, temperature: 1, seed: 9, max_tokens: 10 });
      expect(a.choices.map((c: any) => c.index)).toEqual([0, 1]);
      expect(a.choices.map((c: any) => c.message.content)).toEqual(b.choices.map((c: any) => c.message.content));
      const full = (await chat({ max_tokens: 12 })).choices[0].message.content as string;
      const word = full.trim().split(' ')[1];
      const stopped = await chat({ max_tokens: 12, stop: [word] });
      expect(stopped.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: word });
      expect(stopped.choices[0].message.content).toBe(full.slice(0, full.indexOf(word)));
    });
  });

  describe('logprobs', () => {
    it('content entries carry token, logprob, bytes and top_logprobs', async () => {
      const r = await chat({ logprobs: true, top_logprobs: 3 });
      const content = r.choices[0].logprobs.content;
      expect(content).toHaveLength(8);
      expect(content.map((e: any) => e.token).join('')).toBe(r.choices[0].message.content);
      for (const e of content) {
        expect(Buffer.from(e.bytes).toString('utf8')).toBe(e.token);
        expect(e.top_logprobs).toHaveLength(3);
        expect(e.top_logprobs[0].logprob).toBeGreaterThanOrEqual(e.top_logprobs[2].logprob);
        expect(Object.keys(e.top_logprobs[0]).sort()).toEqual(['bytes', 'logprob', 'token']);
        expect(Array.isArray(e.top_logprobs[0].bytes)).toBe(true);
      }
      const noTop = await chat({ logprobs: true });
      expect(noTop.choices[0].logprobs.content[0].top_logprobs).toEqual([]);
      expect((await chat()).choices[0].logprobs).toBeNull();
    });

    it('return_tokens_as_token_ids and return_token_ids', async () => {
      const r = await chat({ logprobs: true, return_tokens_as_token_ids: true, return_token_ids: true });
      expect(r.choices[0].logprobs.content.map((e: any) => e.token)).toEqual(r.choices[0].token_ids.map((id: number) => `token_id:${id}`));
      expect(r.prompt_token_ids).toHaveLength(r.usage.prompt_tokens);
    });

    it('prompt_logprobs is top-level', async () => {
      const r = await chat({ prompt_logprobs: 0, max_tokens: 1 });
      expect(r.prompt_logprobs).toHaveLength(r.usage.prompt_tokens);
      expect(r.prompt_logprobs[0]).toBeNull();
    });

    it('top_logprobs needs logprobs and is capped at 20', async () => {
      await expectApiError(chat({ top_logprobs: 2 }), 400, 'top_logprobs');
      await expectApiError(chat({ logprobs: true, top_logprobs: 21 }), 400, 'top_logprobs');
    });
  });

  describe('streaming', () => {
    it('role first, then content deltas equal to the non-streaming text, finish_reason, usage, [DONE]', async () => {
      const full = await chat({ max_tokens: 12 });
      const stream = await s.client.chat.completions.create({
        model: s.model, messages: USER as any, temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true },
      });
      const chunks: any[] = [];
      for await (const c of stream) chunks.push(c);
      expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
      expect(chunks[0].object).toBe('chat.completion.chunk');
      const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
      expect(text).toBe(full.choices[0].message.content);
      expect(chunks[chunks.length - 2].choices[0].finish_reason).toBe('length');
      expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: full.usage });
    });

    it('n choices each get a role chunk; prompt ids / text come on the first chunk; per-chunk usage', async () => {
      const r = await s.post('/v1/chat/completions', {
        messages: USER, max_tokens: 3, temperature: 1, seed: 1, n: 2, stream: true,
        return_token_ids: true, return_prompt_text: true, stream_options: { include_usage: true, continuous_usage_stats: true },
      });
      const frames = sseFrames(r.text);
      expect(frames.slice(0, 2).map((f) => [f.choices[0].index, f.choices[0].delta.role])).toEqual([[0, 'assistant'], [1, 'assistant']]);
      expect(frames[0].prompt_text).toBe(RENDERED);
      expect(frames[0].prompt_token_ids.length).toBe(frames[0].usage.prompt_tokens);
      expect(frames.every((f) => f.usage)).toBe(true);
      expect(frames.filter((f) => f.choices[0]?.finish_reason).length).toBe(2);
    });

    it('a client that disconnects aborts its request', async () => {
      await s.expectDisconnectAborts('/v1/chat/completions', { messages: USER, ignore_eos: true });
    });
  });

  describe('unsupported and invalid input', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['audio parts', { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AA', format: 'wav' } }] }] }, 'messages'],
      ['tools without --enable-auto-tool-choice ("auto" is the default)', { tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, 'tool_choice'],
      ['an empty tools list', { tools: [], tool_choice: 'none' }, 'tools'],
      ['tool_choice without tools', { tool_choice: 'required' }, 'tool_choice'],
      ['response_format json_schema without a schema', { response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, 'response_format'],
      ['structured_outputs with two kinds', { structured_outputs: { regex: 'a+', choice: ['a'] } }, 'structured_outputs'],
      ['empty messages', { messages: [] }, 'messages'],
      ['message without role', { messages: [{ content: 'hi' }] }, 'messages'],
      ['temperature 3', { temperature: 3 }, 'temperature'],
      ['n 0', { n: 0 }, 'n'],
      ['cache_salt empty', { cache_salt: '' }, 'cache_salt'],
    ];
    it.each(cases)('%s -> 400', async (_name, body, param) => {
      await expectApiError(chat(body), 400, param);
    });

    it('a named tool_choice needs no tool flags: constrained decoding writes the call', async () => {
      const tool = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['CET', 'UTC'] } }, required: ['zone'], additionalProperties: false } } };
      const r = await chat({ max_tokens: 60, seed: 1, temperature: 1, tools: [tool], tool_choice: { type: 'function', function: { name: 'get_time' } } });
      expect(r.choices[0].message.tool_calls).toHaveLength(1);
      expect(r.choices[0].message.tool_calls[0].function.name).toBe('get_time');
      expect(['CET', 'UTC']).toContain(JSON.parse(r.choices[0].message.tool_calls[0].function.arguments).zone);
    });

    it('tool_choice "none" with tools needs no tool flags: the tools reach the template, the answer is content', async () => {
      const r = await chat({ max_tokens: 1, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'none' });
      expect(r.choices[0].message).toMatchObject({ content: expect.any(String), tool_calls: [] });
    });

    it('unknown model -> 404', async () => {
      await expectApiError(chat({ model: 'gpt-4' }), 404, 'model');
    });
  });
});

onModel.describe('POST /v1/chat/completions/batch', () => {
  let s: Serving;
  const conversations = [USER, [{ role: 'user', content: 'What is a cat?' }]];

  beforeAll(async () => {
    s = await startServing();
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it('answers one choice per conversation, usage summed, same text as single requests', async () => {
    const body = { messages: conversations, temperature: 0, max_tokens: 6, return_token_ids: true };
    const r = await s.post('/v1/chat/completions/batch', body, { 'X-Request-Id': 'batch-1' });
    expect(r.status).toBe(200);
    expect(r.json.id).toBe('chatcmpl-batch-1');
    expect(r.json.object).toBe('chat.completion');
    expect(r.json.choices.map((c: any) => c.index)).toEqual([0, 1]);
    const singles = await Promise.all(
      conversations.map((messages) => s.client.chat.completions.create({ model: s.model, messages: messages as any, temperature: 0, max_tokens: 6 })),
    );
    expect(r.json.choices.map((c: any) => c.message.content)).toEqual(singles.map((x) => x.choices[0].message.content));
    expect(r.json.usage.prompt_tokens).toBe(singles[0].usage!.prompt_tokens + singles[1].usage!.prompt_tokens);
    expect(r.json.usage.completion_tokens).toBe(12);
    expect(r.json.choices[0].token_ids).toHaveLength(6);
  });

  it('supports echo', async () => {
    const r = await s.post('/v1/chat/completions/batch', {
      messages: [[...USER, { role: 'assistant', content: 'Once' }]],
      add_generation_prompt: false, continue_final_message: true, echo: true, max_tokens: 2,
    });
    expect(r.json.choices[0].message.content.startsWith('Once')).toBe(true);
  });

  it.each([
    ['stream', { stream: true }, 'stream'],
    ['beam search', { use_beam_search: true }, 'use_beam_search'],
    ['tools', { tools: [{ type: 'function', function: { name: 'f' } }] }, 'tools'],
    ['a flat message list', { messages: USER }, 'messages'],
  ])('%s -> 400', async (_name, extra, param) => {
    const r = await s.post('/v1/chat/completions/batch', { messages: conversations, max_tokens: 2, ...extra });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'BadRequestError', param, code: 400 });
  });
});
