// ResponsesServing against a scripted engine (no model): stored responses, background runs and
// their cancels, from this replica and from another one sharing the store, including one whose
// stop announcement never arrives (the status check stops it), and input_items paging.

import { createChatTemplate } from '../../../src/model/chat-template';
import { createBuiltinTokenizer } from '../../../src/model/tokenizer';
import { outputParserFactories } from '../../../src/serving/chat-output';
import { OpenAIHttpError } from '../../../src/serving/openai-error';
import type { MessageItem, ResponseObject, ResponseStreamEvent, ResponsesRequestBody } from '../../../src/serving/responses/protocol';
import { ResponsesServing } from '../../../src/serving/responses/responses-serving';
import { MemoryResponsesStore } from '../../../src/serving/responses/store/memory-store';
import type { ResponsesStore } from '../../../src/serving/responses/store/responses-store';
import type { ServingOptions } from '../../../src/serving/serving-options';
import { FakeEngine } from '../../helpers/fake-engine';
import { waitFor } from '../../helpers/wait';

const OPTS: ServingOptions = {
  servedModelNames: ['m'],
  returnTokensAsTokenIds: false,
  enablePromptTokensDetails: false,
  enableForceIncludeUsage: false,
  responseRole: 'assistant',
  trustRequestChatTemplate: false,
  maxLogprobs: 20,
  schedulingPolicy: 'fcfs',
};
const SCRIPT = [...Buffer.from('Hello world. ')];

function engine(stepDelayMs = 0, script = SCRIPT): FakeEngine {
  return new FakeEngine({
    tokenizer: createBuiltinTokenizer(),
    script,
    maxModelLen: 1024,
    stepDelayMs,
    chatTemplate: createChatTemplate("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}", {}),
  });
}

const CHAIN_LIMITS = { maxDepth: 100, maxBytes: 4 * 2 ** 20 };

function serving(store: ResponsesStore, stepDelayMs = 0): { serving: ResponsesServing; engine: FakeEngine } {
  const e = engine(stepDelayMs);
  return { serving: new ResponsesServing(e, OPTS, store, CHAIN_LIMITS), engine: e };
}

async function create(s: ResponsesServing, body: ResponsesRequestBody): Promise<ResponseObject> {
  return s.complete(await s.prepare({ max_output_tokens: 5, ...body }, 'base'));
}

async function background(s: ResponsesServing, body: ResponsesRequestBody = {}): Promise<ResponseObject> {
  const id = `resp_bg_${Math.random().toString(16).slice(2)}`;
  return s.startBackground(await s.prepare({ input: 'Go', background: true, max_output_tokens: 500, request_id: id, ...body }, 'base'));
}

const store = () => new MemoryResponsesStore({ maxBytes: 1 << 20, ttlSeconds: 0 });

describe('ResponsesServing', () => {
  it('stores what it answers; store: false keeps nothing', async () => {
    const { serving: s } = serving(store());
    const r = await create(s, { input: 'Hi' });
    expect(r.id).toBe('resp_base');
    expect(r.output[0]).toMatchObject({ type: 'message', content: [{ text: 'Hello' }] });
    expect(await s.retrieve(r.id)).toEqual(r);
    const unstored = await create(s, { input: 'Hi', store: false, request_id: 'resp_mine' });
    expect(unstored.id).toBe('resp_mine');
    await expect(s.retrieve('resp_mine')).rejects.toMatchObject({ status: 404, param: 'response_id' });
  });

  it('a background run stopped by a cancel here never finishes as completed', async () => {
    const { serving: s, engine: e } = serving(store(), 5);
    await s.start();
    const queued = await background(s);
    expect(queued.status).toBe('queued');
    const events: ResponseStreamEvent[] = [];
    const following = (async () => {
      for await (const event of s.follow(queued.id, null)) events.push(event);
    })();
    await waitFor(async () => (await s.retrieve(queued.id)).status === 'in_progress', 10_000, 'the run to start');
    expect((await s.cancel(queued.id)).status).toBe('cancelled');
    await following;
    expect(events.map((ev) => ev.type)).not.toContain('response.completed');
    expect(e.inFlight).toEqual([]);
    expect((await s.retrieve(queued.id)).status).toBe('cancelled');
    await expect(s.cancel(queued.id)).rejects.toMatchObject({ param: 'response_id' });
  });

  it('a cancel on another replica stops the run: announced at once, or seen by the status check', async () => {
    const shared = store();
    // A store whose stop announcements never arrive: only the per-second status check can tell.
    const deaf: ResponsesStore = Object.assign(Object.create(shared) as ResponsesStore, {
      onStopped: () => Promise.resolve(),
    });
    for (const runnerStore of [shared, deaf]) {
      const runner = serving(runnerStore, 5);
      const other = serving(shared);
      await runner.serving.start();
      await other.serving.start();
      const queued = await background(runner.serving);
      await waitFor(async () => (await other.serving.retrieve(queued.id)).status === 'in_progress', 10_000, 'the run to start');
      await other.serving.cancel(queued.id);
      await waitFor(() => runner.engine.inFlight.length === 0, 10_000, 'the run to stop');
      expect(runner.engine.requests).toHaveLength(1);
      expect((await runner.serving.retrieve(queued.id)).status).toBe('cancelled');
    }
  });

  it('cancelling a finished response is refused; unknown ids are 404', async () => {
    const { serving: s } = serving(store());
    const r = await create(s, { input: 'Hi' });
    const err = await s.cancel(r.id).catch((e: unknown) => e);
    expect(err).toMatchObject({ param: 'response_id' });
    expect((err as Error).message).toMatch(/Cannot cancel a response that is incomplete/);
    await expect(s.cancel('resp_nope')).rejects.toBeInstanceOf(OpenAIHttpError);
    await expect(s.delete('resp_nope')).rejects.toMatchObject({ status: 404 });
  });

  describe('with --tool-call-parser hermes --reasoning-parser deepseek_r1', () => {
    const opts: ServingOptions = { ...OPTS, enableAutoToolChoice: true, toolCallParser: 'hermes', parsers: outputParserFactories({ toolCallParser: 'hermes', reasoningParser: 'deepseek_r1' }) };
    const TOOL = { type: 'function', name: 'f', parameters: { type: 'object', properties: { a: { type: 'integer' } } } };
    /** A serving whose engine writes `text` (one byte a token), and the request that takes all of it. */
    const writing = (text: string) => ({
      serving: new ResponsesServing(engine(0, [...Buffer.from(text)]), opts, store(), CHAIN_LIMITS),
      body: { input: 'Go', max_output_tokens: Buffer.byteLength(text) } as ResponsesRequestBody,
    });
    const events = async (s: ResponsesServing, body: ResponsesRequestBody) => {
      const all: ResponseStreamEvent[] = [];
      for await (const event of s.stream(await s.prepare({ ...body, stream: true }, 'streamed'))) all.push(event);
      return all;
    };

    it('reasoning, then the call: the whitespace between makes no message; streamed the same; reasoning tokens counted', async () => {
      const { serving: s, body } = writing('Hmm.</think>\n\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>');
      const r = await create(s, { ...body, tools: [TOOL] });
      expect(r.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
      expect(r.output[0]).toMatchObject({ content: [{ type: 'reasoning_text', text: 'Hmm.' }] });
      expect(r.output[1]).toMatchObject({ name: 'f', arguments: '{"a": 1}', call_id: expect.stringMatching(/^chatcmpl-tool-/) });
      expect(r.usage?.output_tokens_details.reasoning_tokens).toBe('Hmm.</think>'.length);
      const streamed = await events(s, { ...body, tools: [TOOL] });
      const final = streamed[streamed.length - 1].response as ResponseObject;
      expect(final.output.map(({ id: _id, ...item }) => ({ ...item, call_id: 'x' }))).toEqual(r.output.map(({ id: _id, ...item }) => ({ ...item, call_id: 'x' })));
      expect(streamed.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join('')).toBe('Hmm.');
      expect(streamed.some((e) => e.type === 'response.output_text.delta')).toBe(false);
    });

    it("logprobs stay with the text their tokens made (none for the thinking's tokens)", async () => {
      const { serving: s, body } = writing('Hmm.</think>Yes.');
      const r = await create(s, { ...body, include: ['message.output_text.logprobs'] });
      expect(r.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
      const part = (r.output[1] as MessageItem).content[0];
      expect(part.text).toBe('Yes.');
      expect(part.logprobs?.map((l) => l.token).join('')).toBe('Yes.');
    });
  });

  it('pages input items with after / before, newest first by default', async () => {
    const { serving: s } = serving(store());
    const input = ['a', 'b', 'c', 'd'].map((text) => ({ role: 'user', content: text, id: `msg_${text}` }));
    const r = await create(s, { input });
    const ids = async (q: Parameters<ResponsesServing['inputItems']>[1]) => (await s.inputItems(r.id, q)).data.map((i) => i.id);
    expect(await ids({})).toEqual(['msg_d', 'msg_c', 'msg_b', 'msg_a']);
    expect(await ids({ order: 'asc', after: 'msg_a', limit: 2 })).toEqual(['msg_b', 'msg_c']);
    expect(await ids({ order: 'asc', before: 'msg_c' })).toEqual(['msg_a', 'msg_b']);
    const page = await s.inputItems(r.id, { limit: 3 });
    expect(page).toMatchObject({ object: 'list', first_id: 'msg_d', last_id: 'msg_b', has_more: true });
    await expect(s.inputItems(r.id, { limit: 0 })).rejects.toMatchObject({ param: 'limit' });
    await expect(s.inputItems(r.id, { after: 'msg_zzz' })).rejects.toMatchObject({ param: 'after' });
  });
});
