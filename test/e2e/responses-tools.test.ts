// /v1/responses with function tools and reasoning, end to end through the official `openai`
// client: the real server with --enable-auto-tool-choice --tool-call-parser hermes
// --reasoning-parser deepseek_r1 on stories260K, a few of whose vocabulary entries write whole
// tool-call / thinking texts (forced-serving.ts). Forced calls (required, named) are real
// constrained decoding; streamed events are checked against OpenAI's order and re-assembled with
// the client's own accumulator.

import Ajv from 'ajv';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, expectApiError, type Serving } from './completions-helpers';
import { startForcedServing, type ForcedServing } from './forced-serving';
import { streamResponse, withoutIds } from './responses-helpers';

const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false },
  strict: true,
};
const TIME = {
  type: 'function' as const,
  name: 'get_time',
  description: 'Current time in a time zone',
  parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['CET', 'UTC'] } }, required: ['zone'], additionalProperties: false },
  strict: true,
};
const TOOLS = [WEATHER, TIME];
const QUESTION = 'What is the weather in Paris?';
/** The template closes the thinking in the prompt: the output is answer only. */
const NO_THINKING = { reasoning: { effort: 'none' } };

const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const FORCED = {
  call: CALL,
  contentThenCall: `Let me check.\n${CALL}`,
  // DeepSeek-R1's template opens the thinking in the prompt: the model writes no <think>.
  r1Thinking: 'I considered the sky.</think>Cloudy.',
  taggedThinking: '<think>The sky is clear.</think>Sunny.',
  thinkingThenCall: `<think>I need the weather.</think>\n\n${CALL}`,
  thinkingOnly: '<think>Let me think.</think>',
};
type Forced = keyof typeof FORCED;

const ajv = new Ajv();
const validatorOf: Record<string, (value: unknown) => boolean> = {
  get_weather: ajv.compile(WEATHER.parameters),
  get_time: ajv.compile(TIME.parameters),
};

/** A function_call item of one of the tools, its call_id vLLM's, its arguments valid against that tool's schema (ajv). */
function expectValidCall(item: any, name?: string, status = 'completed'): void {
  expect(item).toMatchObject({ type: 'function_call', status, call_id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/) });
  expect(item.id).toMatch(/^fc_/);
  if (name) expect(item.name).toBe(name);
  expect(Object.keys(validatorOf)).toContain(item.name);
  expect(validatorOf[item.name](JSON.parse(item.arguments))).toBe(true);
}

needs(defaultTestModel()).describe('/v1/responses with function tools and reasoning (hermes + deepseek_r1 parsers)', () => {
  let s: Serving;
  let forced: ForcedServing<Forced>;
  const body = (fields: Record<string, unknown>) => ({ model: s.model, input: QUESTION, temperature: 0, max_output_tokens: 8, ...fields });
  const create = (fields: Record<string, unknown>): Promise<any> => (s.client.responses.create as any)(body(fields));
  const stream = (fields: Record<string, unknown>) => streamResponse(s.client, body(fields));
  /** The same request streamed: the events re-assemble to the non-streamed items. */
  async function expectStreamedSame(fields: Record<string, unknown>, plain: any): Promise<any> {
    const { response } = await stream(fields);
    expect(withoutIds(response.output)).toEqual(withoutIds(plain.output));
    // (cached_tokens differ: the second run finds the first one's prompt in the prefix cache)
    const counts = (usage: any) => ({ input: usage.input_tokens, output: usage.output_tokens, details: usage.output_tokens_details });
    expect(counts(response.usage)).toEqual(counts(plain.usage));
    return response;
  }

  beforeAll(async () => {
    // Compact JSON keeps a tiny model's constrained output short (no runs of whitespace).
    const flags = ['--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--reasoning-parser', 'deepseek_r1',
      '--structured-outputs-config', '{"disable_any_whitespace": true}'];
    forced = await startForcedServing(FORCED, flags);
    s = forced.serving;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  describe('tool_choice "required" and named (constrained decoding)', () => {
    // A story model never stops adding calls by itself: parallel_tool_calls false makes it one.
    const REQUIRED = { tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, temperature: 1, max_output_tokens: 120, ...NO_THINKING };

    it('"required": one function_call item with schema-valid arguments; streamed events re-assemble to the same items', async () => {
      for (const seed of [1, 2]) {
        const r = await create({ ...REQUIRED, seed });
        expect(r.status).toBe('completed');
        expect(r.output).toHaveLength(1);
        expectValidCall(r.output[0]);
        expect(r.tool_choice).toBe('required');
        expect(r.tools).toEqual(TOOLS);
        expect(r.usage.output_tokens_details).toEqual({ reasoning_tokens: 0 });
        await expectStreamedSame({ ...REQUIRED, seed }, r);
      }
    });

    it('a function_call_output item continues the conversation, as items or after previous_response_id', async () => {
      const first = await create({ ...REQUIRED, seed: 1 });
      const call = first.output[0];
      const result = { type: 'function_call_output', call_id: call.call_id, output: '18C and sunny' };
      const next = { tools: TOOLS, tool_choice: 'none', enable_response_messages: true, ...NO_THINKING };
      const explicit = await create({ ...next, input: [{ role: 'user', content: QUESTION }, call, result] });
      expect(explicit.status).toBe('incomplete');
      expect(explicit.output).toEqual([expect.objectContaining({ type: 'message' })]);
      expect(explicit.usage.input_tokens).toBeGreaterThan(first.usage.input_tokens);
      const prompt = explicit.input_messages[0].message;
      expect(prompt).toContain(`<|im_start|>assistant\n<tool_call>\n{"name": "${call.name}", "arguments": `);
      expect(prompt).toContain('<|im_start|>user\n<tool_response>\n18C and sunny\n</tool_response><|im_end|>\n');
      const chained = await create({ ...next, input: [result], previous_response_id: first.id });
      expect(chained.input_messages[0].message).toBe(prompt);
      const items = await s.client.responses.inputItems.list(chained.id);
      expect(items.data).toEqual([expect.objectContaining({ type: 'function_call_output', call_id: call.call_id, id: expect.stringMatching(/^fco_/) })]);
    });

    it('a named function: one call of it, streamed the same', async () => {
      const named = { tools: TOOLS, tool_choice: { type: 'function', name: 'get_time' }, temperature: 1, seed: 3, max_output_tokens: 60, ...NO_THINKING };
      const r = await create(named);
      expect(r.status).toBe('completed');
      expect(r.output).toHaveLength(1);
      expectValidCall(r.output[0], 'get_time');
      await expectStreamedSame(named, r);
    });

    it('with thinking on, the constraint starts after </think>: a reasoning item, then the call', async () => {
      const thinking = { ...REQUIRED, ...forced.forcing('thinkingOnly'), reasoning: { effort: 'high' }, seed: 4 };
      const r = await create(thinking);
      expect(r.output.map((item: any) => item.type)).toEqual(['reasoning', 'function_call']);
      expect(r.output[0].content).toEqual([{ type: 'reasoning_text', text: 'Let me think.' }]);
      expectValidCall(r.output[1]);
      expect(r.usage.output_tokens_details.reasoning_tokens).toBe(1);
      await expectStreamedSame(thinking, r);
    });
  });

  describe('tool_choice "auto" with the hermes parser', () => {
    it('the model writes two <tool_call> blocks: two function_call items and no message, streamed the same', async () => {
      const auto = { tools: [WEATHER], ...forced.forcing('call'), max_output_tokens: 2, ...NO_THINKING };
      const r = await create(auto);
      expect(r.output.map((item: any) => [item.type, item.name, item.arguments])).toEqual([
        ['function_call', 'get_weather', '{"city": "Paris"}'],
        ['function_call', 'get_weather', '{"city": "Paris"}'],
      ]);
      expect(r.output[0].call_id).not.toBe(r.output[1].call_id);
      expectValidCall(r.output[0]);
      // The response was cut by max_output_tokens, but the second call is whole: completed.
      expect(r.status).toBe('incomplete');
      expectValidCall(r.output[1], 'get_weather', 'completed');
      await expectStreamedSame(auto, r);
      // A stop string ends the output after one call: completed.
      const stopped = await create({ ...auto, max_output_tokens: 4, stop: ['</tool_call>'], include_stop_str_in_output: true });
      expect(stopped.status).toBe('completed');
      expect(stopped.output).toHaveLength(1);
    });

    it('text before the call is a message item; parallel_tool_calls false keeps the first call; "none" leaves the text alone', async () => {
      const mixed = { tools: [WEATHER], ...forced.forcing('contentThenCall'), max_output_tokens: 1, ...NO_THINKING };
      const r = await create(mixed);
      expect(r.output.map((item: any) => item.type)).toEqual(['message', 'function_call']);
      expect(r.output[0].content[0].text).toBe('Let me check.\n');
      await expectStreamedSame(mixed, r);
      const single = { tools: [WEATHER], ...forced.forcing('call'), max_output_tokens: 2, parallel_tool_calls: false, ...NO_THINKING };
      expect((await create(single)).output).toHaveLength(1);
      expect((await stream(single)).response.output).toHaveLength(1);
      const none = await create({ tools: [WEATHER], tool_choice: 'none', ...forced.forcing('call'), max_output_tokens: 1, ...NO_THINKING });
      expect(none.output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: CALL })] })]);
    });
  });

  describe('reasoning (deepseek_r1)', () => {
    it('R1 writes no <think>: the text before </think> is a reasoning item, the rest a message, streamed the same', async () => {
      for (const [text, reasoning, answer] of [['r1Thinking', 'I considered the sky.', 'Cloudy.'], ['taggedThinking', 'The sky is clear.', 'Sunny.']] as const) {
        const fields = { ...forced.forcing(text), max_output_tokens: 1 };
        const r = await create(fields);
        expect(r.output.map((item: any) => item.type)).toEqual(['reasoning', 'message']);
        expect(r.output[0]).toMatchObject({ id: expect.stringMatching(/^rs_/), summary: [], content: [{ type: 'reasoning_text', text: reasoning }] });
        expect(r.output_text).toBe(answer);
        expect(r.usage.output_tokens_details).toEqual({ reasoning_tokens: 1 });
        await expectStreamedSame(fields, r);
      }
    });

    it('a call after the thinking: reasoning, then the call (the whitespace between is no message)', async () => {
      const fields = { tools: [WEATHER], ...forced.forcing('thinkingThenCall'), max_output_tokens: 1 };
      const r = await create(fields);
      expect(r.output.map((item: any) => item.type)).toEqual(['reasoning', 'function_call']);
      expect(r.output[0].content[0].text).toBe('I need the weather.');
      // The one forced token used up max_output_tokens: the call is whole (completed), the response incomplete.
      expect(r.status).toBe('incomplete');
      expectValidCall(r.output[1], 'get_weather', 'completed');
      await expectStreamedSame(fields, r);
    });

    it('text.format json_schema applies after the thinking: reasoning item, then valid JSON', async () => {
      const fields = { text: { format: { type: 'json_schema', name: 'w', schema: WEATHER.parameters } }, ...forced.forcing('thinkingOnly'), temperature: 1, seed: 5, max_output_tokens: 80 };
      const r = await create(fields);
      expect(r.output.map((item: any) => item.type)).toEqual(['reasoning', 'message']);
      expect(r.output[0].content[0].text).toBe('Let me think.');
      expect(validatorOf.get_weather(JSON.parse(r.output_text))).toBe(true);
      await expectStreamedSame(fields, r);
    });

    it('reasoning.effort reaches the template: "none" closes the thinking, the output is all answer', async () => {
      const r = await create({ ...NO_THINKING, enable_response_messages: true });
      expect(r.input_messages[0].message.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
      expect(r.output.map((item: any) => item.type)).toEqual(['message']);
      expect(r.usage.output_tokens_details).toEqual({ reasoning_tokens: 0 });
      expect(r.reasoning).toMatchObject({ effort: 'none' });
      // Thinking on (the default): without </think> everything is reasoning.
      const thinking = await create({});
      expect(thinking.output.map((item: any) => item.type)).toEqual(['reasoning']);
      expect(thinking.output[0].content[0].text.length).toBeGreaterThan(0);
      expect(thinking.usage.output_tokens_details).toEqual({ reasoning_tokens: 8 });
    });
  });

  describe('bad requests', () => {
    it('answer 400 with the field named', async () => {
      const web = await expectApiError(create({ tools: [WEATHER, { type: 'web_search_preview' }] }), 400, 'tools.1.type');
      expect(web.message).toContain("'web_search_preview'");
      const hosted = await expectApiError(create({ tools: TOOLS, tool_choice: { type: 'file_search' } }), 400, 'tool_choice.type');
      expect(hosted.message).toContain('"file_search"');
      await expectApiError(create({ tools: TOOLS, tool_choice: { type: 'function', name: 'other' } }), 400, 'tool_choice');
      await expectApiError(create({ tools: TOOLS, tool_choice: { type: 'function' } }), 400, 'tool_choice.name');
      await expectApiError(create({ tool_choice: 'required' }), 400, 'tool_choice');
      await expectApiError(create({ tools: [{ ...WEATHER, parameters: { type: 'objekt' } }] }), 400, 'tools.0.parameters');
      await expectApiError(create({ tools: [] }), 400, 'tools');
      await expectApiError(create({ tools: TOOLS, tool_choice: 'required', text: { format: { type: 'json_object' } } }), 400, 'tool_choice');
      await expectApiError(create({ reasoning: { effort: 'extreme' } }), 400, 'reasoning.effort', 'Bad Request');
    });
  });
});
