// /v1/responses against the real server on stories260K (ChatML-like test template), through the
// official `openai` client: text in and out, typed streaming events, storage, input_items,
// previous_response_id, background runs and cancel, and two servers sharing one real Redis.

import Ajv from 'ajv';
import { randomUUID } from 'node:crypto';
import { SERVER_START_TIMEOUT_MS, defaultTestModel, expectApiError, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';
import { REDIS_SERVER, startRedis, type TestRedis } from '../helpers/redis-server';
import { waitFor } from '../helpers/wait';

const STORY = 'Tell me a story about a dog.';

/** Polls GET /v1/responses/{id} until `done` says so; returns the last response. */
async function pollUntil(s: Serving, id: string, done: (r: any) => boolean, timeoutMs = 60_000): Promise<any> {
  let last: any = null;
  await waitFor(async () => {
    last = await s.client.responses.retrieve(id);
    return done(last);
  }, timeoutMs);
  return last;
}

/** A long background generation (ignore_eos keeps it going) to cancel. */
const LONG_RUN = { input: STORY, background: true, max_output_tokens: 400, ignore_eos: true, temperature: 0 };

needs(defaultTestModel()).describe('/v1/responses', () => {
  let s: Serving;
  const create = (body: Record<string, unknown>, options?: Record<string, unknown>): Promise<any> =>
    (s.client.responses.create as any)({ model: s.model, temperature: 0, max_output_tokens: 12, ...body }, options);

  beforeAll(async () => {
    // Compact JSON keeps a 260K-parameter story model from wandering in whitespace under a schema.
    s = await startServing(['--max-model-len', '512', '--structured-outputs-config', '{"backend": "xgrammar", "disable_any_whitespace": true}']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  describe('create', () => {
    it("answers OpenAI's response object, the same text greedy chat gives", async () => {
      const r = await create({ input: STORY });
      expect(r.id).toMatch(/^resp_[0-9a-f]{32}$/);
      expect(r).toMatchObject({ object: 'response', model: s.model, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
      expect(r.output).toHaveLength(1);
      expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant', id: expect.stringMatching(/^msg_/) });
      expect(r.output[0].content[0]).toMatchObject({ type: 'output_text', annotations: [] });
      expect(r.usage).toMatchObject({ output_tokens: 12, total_tokens: r.usage.input_tokens + 12, input_tokens_details: { cached_tokens: expect.any(Number) } });
      const chat = await s.client.chat.completions.create({ model: s.model, messages: [{ role: 'user', content: STORY }], temperature: 0, max_tokens: 12 });
      expect(r.output_text).toBe(chat.choices[0].message.content);
      expect(r.usage.input_tokens).toBe(chat.usage!.prompt_tokens);
    });

    it('puts instructions first as a system message and takes input items with input_text parts', async () => {
      const input = [
        { role: 'user', content: [{ type: 'input_text', text: 'Tell me a story' }, { type: 'input_text', text: 'about a dog.' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Once there was a dog.' }] },
        { role: 'user', content: 'More.' },
      ];
      const r = await create({ input, instructions: 'Be kind.', enable_response_messages: true });
      expect(r.input_messages[0].type).toBe('raw_message_tokens');
      expect(r.input_messages[0].tokens.length).toBe(r.usage.input_tokens);
      expect(r.input_messages[0].message).toBe(
        '<|system|>Be kind.\n<|user|>Tell me a story\nabout a dog.\n<|assistant|>Once there was a dog.\n<|user|>More.\n<|assistant|>',
      );
      expect(r.output_messages[0].message).toBe(r.output_text);
      const chat = await s.client.chat.completions.create({
        model: s.model,
        messages: [{ role: 'system', content: 'Be kind.' }, { role: 'user', content: 'Tell me a story\nabout a dog.' }, { role: 'assistant', content: 'Once there was a dog.' }, { role: 'user', content: 'More.' }],
        temperature: 0,
        max_tokens: 12,
      });
      expect(r.output_text).toBe(chat.choices[0].message.content);
    });

    it('returns logprobs with include, and the vLLM sampling extras apply', async () => {
      const r = await create({ input: STORY, include: ['message.output_text.logprobs'], top_logprobs: 2, max_output_tokens: 4 });
      const logprobs = r.output[0].content[0].logprobs;
      expect(logprobs).toHaveLength(4);
      expect(logprobs[0]).toMatchObject({ token: expect.any(String), logprob: expect.any(Number) });
      expect(Array.isArray(logprobs[0].bytes)).toBe(true);
      expect(logprobs[0].top_logprobs).toHaveLength(2);
      expect(logprobs.map((l: any) => l.token).join('')).toBe(r.output_text);
      const stopped = await create({ input: STORY, max_output_tokens: 40, stop: [r.output_text.slice(1, 3)] });
      expect(stopped.status).toBe('completed');
      expect(stopped.output_text).toBe(r.output_text.slice(0, 1));
    });

    it("truncation 'auto' keeps the newest tokens that fit; 'disabled' refuses a prompt too long", async () => {
      const long = Array.from({ length: 80 }, () => STORY).join(' ');
      const r = await create({ input: long, truncation: 'auto', max_output_tokens: 8 });
      expect(r.usage.input_tokens).toBe(512 - 8);
      expect(r.usage.output_tokens).toBe(8);
      await expectApiError(create({ input: long, max_output_tokens: 8 }), 400, 'input');
    });

    it('previous_input_messages are the conversation before the input (vLLM)', async () => {
      const r = await create({
        input: 'And then?',
        previous_input_messages: [{ role: 'user', content: STORY }, { role: 'assistant', content: 'A dog ran.' }],
        enable_response_messages: true,
        max_output_tokens: 2,
      });
      expect(r.input_messages[0].message).toBe(`<|user|>${STORY}\n<|assistant|>A dog ran.\n<|user|>And then?\n<|assistant|>`);
      await expectApiError(create({ input: 'x', previous_input_messages: [], previous_response_id: r.id }), 400, 'previous_response_id');
    });
  });

  describe('text.format', () => {
    const SCHEMA = {
      type: 'object',
      properties: { color: { type: 'string', enum: ['red', 'green', 'blue'] }, size: { type: 'integer', minimum: 0, maximum: 9 } },
      required: ['color', 'size'],
      additionalProperties: false,
    };
    const format = { type: 'json_schema', name: 'thing', schema: SCHEMA, strict: true };

    it('json_schema gives JSON valid against the schema, streamed or not', async () => {
      const validate = new Ajv().compile(SCHEMA);
      for (const seed of [1, 2, 3]) {
        const r = await create({ input: STORY, text: { format }, temperature: 1, seed, max_output_tokens: 150 });
        expect(r.status).toBe('completed');
        expect([r.output_text, validate(JSON.parse(r.output_text))]).toEqual([r.output_text, true]);
        expect(r.text.format).toMatchObject({ type: 'json_schema', name: 'thing' });
      }
      const stream = await create({ input: STORY, text: { format }, stream: true, max_output_tokens: 150 });
      let text = '';
      for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
      expect(validate(JSON.parse(text))).toBe(true);
    });

    it('two constraints or a bad schema are refused, naming text.format', async () => {
      await expectApiError(create({ input: STORY, text: { format }, structured_outputs: { regex: 'a+' } }), 400, 'text.format');
      await expectApiError(create({ input: STORY, text: { format: { type: 'json_schema', name: 'x', schema: { type: 'nope' } } } }), 400, 'text.format');
    });
  });

  describe('streaming', () => {
    it("sends OpenAI's typed events in order, numbered, and the deltas join to the final text", async () => {
      const stream = await create({ input: STORY, stream: true, max_output_tokens: 10 });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      const types = events.map((e) => e.type);
      const deltas = events.filter((e) => e.type === 'response.output_text.delta');
      expect(types).toEqual([
        'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
        ...deltas.map(() => 'response.output_text.delta'),
        'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete',
      ]);
      const final = events[events.length - 1].response;
      const text = deltas.map((e) => e.delta).join('');
      expect(events[types.indexOf('response.output_text.done')].text).toBe(text);
      expect(final.output[0].content[0].text).toBe(text);
      expect(final.usage.output_tokens).toBe(10);
      const plain = await create({ input: STORY, max_output_tokens: 10 });
      expect(text).toBe(plain.output_text);
      // The streamed response was stored as it finished.
      expect((await s.client.responses.retrieve(final.id)).output_text).toBe(text);
    });

    it('writes an event: line naming each frame, and no [DONE]', async () => {
      const res = await fetch(`${s.server.baseUrl}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: STORY, stream: true, max_output_tokens: 2 }),
      });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const frames = (await res.text()).trim().split('\n\n');
      for (const frame of frames) {
        const [eventLine, dataLine] = frame.split('\n');
        expect(eventLine).toBe(`event: ${JSON.parse(dataLine.slice('data: '.length)).type}`);
      }
      expect(frames[frames.length - 1]).not.toContain('[DONE]');
    });
  });

  describe('stored responses', () => {
    it('retrieves, lists input items (newest first) and deletes', async () => {
      const input = [{ role: 'user', content: 'First.' }, { role: 'user', content: 'Second.' }];
      const r = await create({ input, metadata: { topic: 'dogs' } });
      const got = await s.client.responses.retrieve(r.id);
      expect(got).toMatchObject({ id: r.id, status: r.status, metadata: { topic: 'dogs' }, output: r.output });
      const items = await s.client.responses.inputItems.list(r.id);
      expect(items.data.map((i: any) => i.content[0].text)).toEqual(['Second.', 'First.']);
      expect(items.data[0].id).toMatch(/^msg_/);
      const asc = await s.client.responses.inputItems.list(r.id, { order: 'asc', limit: 1 });
      expect(asc.data.map((i: any) => i.content[0].text)).toEqual(['First.']);
      expect(asc.has_more).toBe(true);
      await s.client.responses.delete(r.id);
      await expectApiError(s.client.responses.retrieve(r.id), 404, 'response_id');
    });

    it('keeps nothing with store: false, and answers unknown ids with 404', async () => {
      const r = await create({ input: STORY, store: false, max_output_tokens: 2 });
      expect(r.store).toBe(false);
      await expectApiError(s.client.responses.retrieve(r.id), 404, 'response_id');
      await expectApiError(s.client.responses.cancel('resp_nope'), 404, 'response_id');
      await expectApiError(s.client.responses.inputItems.list('resp_nope'), 404, 'response_id');
    });

    it('previous_response_id puts the prior turns before the new input', async () => {
      const first = await create({ input: STORY, instructions: 'Be kind.' });
      const second = await create({ input: 'And then?', previous_response_id: first.id, enable_response_messages: true });
      // Instructions do not carry over; the first turn's input and output do.
      expect(second.input_messages[0].message).toBe(`<|user|>${STORY}\n<|assistant|>${first.output_text}\n<|user|>And then?\n<|assistant|>`);
      expect(second.usage.input_tokens).toBeGreaterThan(first.usage.input_tokens + first.usage.output_tokens - 4);
      expect(second.previous_response_id).toBe(first.id);
      const third = await create({ input: 'The end.', previous_response_id: second.id, enable_response_messages: true });
      expect(third.input_messages[0].message).toContain(`<|assistant|>${first.output_text}\n<|user|>And then?\n<|assistant|>${second.output_text}\n`);
      await expectApiError(create({ input: 'x', previous_response_id: 'resp_missing' }), 404, 'previous_response_id');
    });
  });

  describe('background', () => {
    it('answers queued at once and finishes with the foreground text', async () => {
      const queued = await create({ input: STORY, background: true });
      expect(queued).toMatchObject({ status: 'queued', background: true, output: [] });
      const done = await pollUntil(s, queued.id, (r) => r.status !== 'queued' && r.status !== 'in_progress');
      const foreground = await create({ input: STORY });
      expect(done.status).toBe('incomplete');
      expect(done.output_text).toBe(foreground.output_text);
      await expectApiError(s.client.responses.cancel(queued.id), 400, 'response_id');
    });

    it('cancel stops the engine request while it runs, and the response stays cancelled', async () => {
      const aborted = () => s.metric('vllm:request_success_total', 'finished_reason="abort"');
      const before = await aborted();
      // Follow the run until its first text arrives, so the cancel meets it in progress. On a fast
      // engine the whole run can end before the cancel reaches the server (a 400 naming the ended
      // response): then a new run is tried, a few times at most.
      let seen: string[] = [];
      let id = '';
      let cancelled = false;
      for (let attempt = 0; attempt < 5 && !cancelled; attempt++) {
        const stream = await create({ ...LONG_RUN, stream: true });
        seen = [];
        for await (const event of stream) {
          seen.push(event.type);
          if (event.type === 'response.created') id = event.response.id;
          if (event.type === 'response.output_text.delta') {
            const outcome = await s.client.responses.cancel(id).catch((err: Error) => err);
            if (outcome instanceof Error && /Cannot cancel a response that is incomplete/.test(outcome.message)) break;
            expect(outcome instanceof Error ? outcome.message : outcome.status).toBe('cancelled');
            cancelled = true;
            break;
          }
        }
      }
      expect(cancelled).toBe(true);
      await waitFor(async () => (await aborted()) === before + 1, 30_000);
      const stored = await s.client.responses.retrieve(id);
      expect(stored.status).toBe('cancelled');
      expect(seen).not.toContain('response.completed');
      await expectApiError(s.client.responses.cancel(id), 400, 'response_id');
    }, 120_000);

    it('streams a background run, and GET ?stream=true replays it from a sequence number', async () => {
      const stream = await create({ input: STORY, background: true, stream: true, max_output_tokens: 6 });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      expect(events[0]).toMatchObject({ type: 'response.created', response: { status: 'queued' } });
      expect(events[events.length - 1].type).toBe('response.incomplete');
      const id = events[0].response.id;
      const replay: any[] = [];
      for await (const event of await (s.client.responses.retrieve as any)(id, { stream: true, starting_after: 2 })) replay.push(event);
      expect(replay).toEqual(events.slice(3));
    });

    it('refuses background without store', async () => {
      await expectApiError(create({ input: STORY, background: true, store: false }), 400, 'background');
    });
  });

  describe('bad input', () => {
    it('answers with the envelope and the field', async () => {
      await expectApiError(create({ input: STORY, model: 'nope' }), 404, 'model');
      const web = await expectApiError(create({ input: STORY, tools: [{ type: 'web_search_preview' }] }), 400, 'tools.0.type');
      expect(web.message).toContain("'web_search_preview'");
      // Function tools default to tool_choice "auto", which needs the tool-call flags (as chat).
      const tool = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
      const auto = await expectApiError(create({ input: STORY, tools: [tool] }), 400, 'tool_choice');
      expect(auto.message).toContain('--enable-auto-tool-choice');
      await expectApiError(create({ input: [{ type: 'computer_call', call_id: 'c' }] }), 400, 'input');
      await expectApiError(create({ input: STORY, include: ['reasoning.encrypted_content'] }), 400, 'include');
      await expectApiError(create({ input: STORY, max_output_tokens: 100_000 }), 400, 'max_output_tokens');
      await expectApiError(create({ input: STORY, prompt: { id: 'pmpt_1' } }), 400, 'prompt');
      await expectApiError(create({ input: 5 }), 400, 'input', 'Bad Request');
    });

    it('a request_id already stored is refused', async () => {
      const id = `resp_${randomUUID()}`;
      await create({ input: STORY, request_id: id, max_output_tokens: 1 });
      await expectApiError(create({ input: STORY, request_id: id, max_output_tokens: 1 }), 400, 'request_id');
    });
  });
});

needs(defaultTestModel(), REDIS_SERVER).describe('/v1/responses on two servers sharing one Redis', () => {
  let redis: TestRedis;
  let a: Serving;
  let b: Serving;

  beforeAll(async () => {
    redis = await startRedis();
    const args = ['--max-model-len', '512', '--api-key', 'unused', '--responses-store', redis.url];
    [a, b] = await Promise.all([startServing([...args, '--max-num-seqs', '1']), startServing(args)]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all([a?.server.stop(), b?.server.stop()]);
    await redis?.stop();
  });

  const create = (s: Serving, body: Record<string, unknown>): Promise<any> =>
    (s.client.responses.create as any)({ model: s.model, temperature: 0, max_output_tokens: 8, ...body });

  it('is behind the API key', async () => {
    const res = await fetch(`${a.server.baseUrl}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"input":"x"}' });
    expect(res.status).toBe(401);
    expect((await fetch(`${a.server.baseUrl}/v1/responses/resp_x`)).status).toBe(401);
  });

  it('a response made on one server is retrieved and continued on the other', async () => {
    const first = await create(a, { input: STORY });
    expect(await b.client.responses.retrieve(first.id)).toMatchObject({ id: first.id, output: first.output });
    const second = await create(b, { input: 'And then?', previous_response_id: first.id, enable_response_messages: true });
    expect(second.input_messages[0].message).toContain(`<|assistant|>${first.output_text}\n<|user|>And then?`);
    expect(second.usage.input_tokens).toBeGreaterThan(first.usage.input_tokens);
    const items = await a.client.responses.inputItems.list(second.id);
    expect(items.data.map((i: any) => i.content[0].text)).toEqual(['And then?']);
  });

  it('a cancel sent to the other server stops the run', async () => {
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(`${a.server.baseUrl}/metrics`, { headers: { authorization: 'Bearer unused' } })).text();
      return text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`)).reduce((sum, l) => sum + Number(l.trim().split(/\s+/).pop()), 0);
    };
    const generatedBefore = await metric('vllm:generation_tokens_total');
    // Server a runs one sequence at a time: long requests ahead keep the background run queued.
    const blockers = Array.from({ length: 6 }, () => create(a, { input: STORY, max_output_tokens: 400, ignore_eos: true, store: false }));
    await waitFor(async () => (await metric('vllm:num_requests_running')) === 1);
    const queued = await create(a, LONG_RUN);
    expect((await b.client.responses.cancel(queued.id)).status).toBe('cancelled');
    const done = await Promise.all(blockers);
    // The cancelled run never generated: every token counted is a blocker's.
    await waitFor(async () => (await metric('vllm:num_requests_running')) + (await metric('vllm:num_requests_waiting')) === 0, 30_000);
    const generated = (await metric('vllm:generation_tokens_total')) - generatedBefore;
    expect(generated).toBe(done.reduce((sum, r) => sum + r.usage.output_tokens, 0));
    expect((await a.client.responses.retrieve(queued.id)).status).toBe('cancelled');
  }, 120_000);
});
