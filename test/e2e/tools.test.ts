// Tool calling and reasoning output end to end: the real server with a Hermes-style (Qwen2.5 /
// Qwen3) chat template written for the test, --enable-auto-tool-choice --tool-call-parser hermes
// --reasoning-parser qwen3, through the official `openai` client. The model is stories260K with
// a few vocabulary entries turned into whole tool-call / thinking texts: `logit_bias` on one of
// them makes the model really write that markup, which the parsers then take apart.

import Ajv from 'ajv';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, expectApiError, type Serving } from './completions-helpers';
import { startForcedServing, type ForcedServing } from './forced-serving';
import { streamResponse, withoutIds } from './responses-helpers';

const TIME_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_time',
    description: 'Current time in a time zone',
    parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['CET', 'UTC'] } }, required: ['zone'], additionalProperties: false },
  },
};

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false },
  },
};

const onModel = needs(defaultTestModel());
const USER = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };

const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
/** The texts the test model can be made to write, one token each. */
const FORCED = {
  call: CALL,
  contentThenCall: `Let me check.\n${CALL}`,
  thinkingThenAnswer: '<think>The sky is clear.</think>Sunny.',
  thinkingThenCall: `<think>I need the weather.</think>\n${CALL}`,
  thinkingOnly: '<think>Let me think.</think>',
};
type Forced = keyof typeof FORCED;

const ajv = new Ajv();
const validArguments = ajv.compile(WEATHER_TOOL.function.parameters);
const validatorOf: Record<string, (value: unknown) => boolean> = {
  get_weather: validArguments,
  get_time: ajv.compile(TIME_TOOL.function.parameters),
};

/** Every call is one of the tools and its arguments validate against that tool's schema (ajv). */
function expectValidCalls(calls: Array<{ function: { name: string; arguments: string } }>): void {
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) {
    expect(Object.keys(validatorOf)).toContain(call.function.name);
    expect(validatorOf[call.function.name](JSON.parse(call.function.arguments))).toBe(true);
  }
}

/** Assembles streamed tool-call deltas the way clients do, checking the first delta of each call. */
function assembleCalls(deltas: any[]): Array<{ id: string; type: string; function: { name: string; arguments: string } }> {
  const calls: any[] = [];
  for (const delta of deltas) {
    if (delta.id !== undefined) {
      expect(delta).toMatchObject({ type: 'function', function: { name: expect.any(String) } });
      calls[delta.index] = { id: delta.id, type: delta.type, function: { name: delta.function.name, arguments: delta.function.arguments ?? '' } };
    } else {
      calls[delta.index].function.arguments += delta.function.arguments ?? '';
    }
  }
  return calls;
}

onModel.describe('tool calling and reasoning (hermes + qwen3 parsers)', () => {
  let s: Serving;
  let forced: ForcedServing<Forced>;
  const chat = (body: Record<string, unknown>): Promise<any> =>
    s.client.chat.completions.create({ model: s.model, messages: USER, temperature: 0, max_tokens: 8, ...body });
  /** Makes the model write `text` once per generated token. */
  const forcing = (text: Forced, tokens: number) => ({ ...forced.forcing(text), max_tokens: tokens });

  async function streamChat(body: Record<string, unknown>) {
    const stream = await s.client.chat.completions.create({ model: s.model, messages: USER, temperature: 0, ...body, stream: true } as any);
    const deltas: any[] = [];
    let finish: string | null = null;
    for await (const chunk of stream as any) {
      if (chunk.choices[0]) deltas.push(chunk.choices[0].delta);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    const join = (key: string) => deltas.map((d) => d[key] ?? '').join('');
    return { reasoning: join('reasoning'), content: join('content'), calls: assembleCalls(deltas.flatMap((d) => d.tool_calls ?? [])), finish };
  }

  beforeAll(async () => {
    // Compact JSON keeps a tiny model's constrained output short (no runs of whitespace).
    const flags = ['--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--reasoning-parser', 'qwen3',
      '--structured-outputs-config', '{"disable_any_whitespace": true}'];
    forced = await startForcedServing(FORCED, flags);
    s = forced.serving;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  describe('tool_choice "auto" with the hermes parser', () => {
    it('the model writes two <tool_call> blocks: two tool_calls, no tag text in content', async () => {
      const r = await chat({ tools: [WEATHER_TOOL], ...forcing('call', 2), ...NO_THINKING });
      const choice = r.choices[0];
      expect(choice.message.content).toBeNull();
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.tool_calls).toHaveLength(2);
      for (const call of choice.message.tool_calls) {
        expect(call).toMatchObject({ id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/), type: 'function', function: { name: 'get_weather' } });
        expect(validArguments(JSON.parse(call.function.arguments))).toBe(true);
      }
      expect(choice.message.tool_calls[0].id).not.toBe(choice.message.tool_calls[1].id);
    });

    it('streamed: deltas assemble to the same calls, finish_reason tool_calls once the model stops', async () => {
      const body = { tools: [WEATHER_TOOL], ...forcing('call', 2), ...NO_THINKING };
      const full = await chat(body);
      const streamed = await streamChat(body);
      expect(streamed.content).toBe('');
      expect(streamed.calls.map((c) => c.function)).toEqual(full.choices[0].message.tool_calls.map((c: any) => c.function));
      // A stop string ends the output after one call: the engine says "stop", the API "tool_calls".
      const stopped = { tools: [WEATHER_TOOL], ...forcing('call', 4), stop: ['</tool_call>'], include_stop_str_in_output: true, ...NO_THINKING };
      expect((await streamChat(stopped)).finish).toBe('tool_calls');
      expect((await chat(stopped)).choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [expect.anything()] } });
    });

    it('text before the call stays content; parallel_tool_calls false keeps the first call', async () => {
      const mixed = await chat({ tools: [WEATHER_TOOL], ...forcing('contentThenCall', 1), ...NO_THINKING });
      expect(mixed.choices[0].message).toMatchObject({ content: 'Let me check.\n', tool_calls: [{ function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] });
      const streamed = await streamChat({ tools: [WEATHER_TOOL], ...forcing('contentThenCall', 1), ...NO_THINKING });
      expect(streamed).toMatchObject({ content: 'Let me check.\n', calls: [{ function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] });
      const single = await chat({ tools: [WEATHER_TOOL], ...forcing('call', 2), parallel_tool_calls: false, ...NO_THINKING });
      expect(single.choices[0].message.tool_calls).toHaveLength(1);
      expect((await streamChat({ tools: [WEATHER_TOOL], ...forcing('call', 2), parallel_tool_calls: false, ...NO_THINKING })).calls).toHaveLength(1);
    });

    it('tool_choice "none": the same text is plain content', async () => {
      const r = await chat({ tools: [WEATHER_TOOL], tool_choice: 'none', ...forcing('call', 1), ...NO_THINKING });
      expect(r.choices[0].message).toMatchObject({ content: CALL, tool_calls: [] });
      expect(r.choices[0].finish_reason).toBe('length');
    });
  });

  describe('tool_choice "required" and named functions (constrained decoding)', () => {
    const TOOLS = [WEATHER_TOOL, TIME_TOOL];

    it('"required": calls of the tools with schema-valid arguments; streamed deltas equal the non-streamed calls', async () => {
      // A story model never stops adding calls by itself: parallel_tool_calls false makes it one.
      for (const seed of [1, 2]) {
        const body = { tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed, max_tokens: 120, ...NO_THINKING };
        const r = await chat(body);
        const choice = r.choices[0];
        expect(choice.finish_reason).toBe('tool_calls');
        expect(choice.message.content).toBe('');
        expect(choice.message.tool_calls).toHaveLength(1);
        expectValidCalls(choice.message.tool_calls);
        for (const call of choice.message.tool_calls) expect(call.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
        const streamed = await streamChat(body);
        expect(streamed.calls.map((c) => c.function)).toEqual(choice.message.tool_calls.map((c: any) => c.function));
        expect(streamed.finish).toBe('tool_calls');
      }
    });

    it('a named function: one call of it (finish_reason "stop", as OpenAI and vLLM send), streamed the same', async () => {
      const body = {
        tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_time' } }, temperature: 1, seed: 3, max_tokens: 60, ...NO_THINKING,
      };
      const r = await chat(body);
      expect(r.choices[0].finish_reason).toBe('stop');
      expect(r.choices[0].message.tool_calls).toHaveLength(1);
      expect(r.choices[0].message.tool_calls[0].function.name).toBe('get_time');
      expectValidCalls(r.choices[0].message.tool_calls);
      const streamed = await streamChat(body);
      expect(streamed.calls.map((c) => c.function)).toEqual(r.choices[0].message.tool_calls.map((c: any) => c.function));
    });

    it('a request that also brings its own constraint is refused', async () => {
      await expectApiError(chat({ tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } }), 400, 'tool_choice');
    });

    it('with thinking on, the constraint starts after </think>: reasoning, then the calls', async () => {
      // The biased thinking token comes first; once </think> is out the grammar masks it.
      const body = { tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, ...forcing('thinkingOnly', 120), temperature: 1, seed: 4 };
      const r = await chat(body);
      expect(r.choices[0].message.reasoning).toBe('Let me think.');
      expectValidCalls(r.choices[0].message.tool_calls);
      const streamed = await streamChat(body);
      expect(streamed.reasoning).toBe('Let me think.');
      expect(streamed.calls.map((c) => c.function)).toEqual(r.choices[0].message.tool_calls.map((c: any) => c.function));
    });

    it('response_format json_schema after thinking: the answer is the JSON, the thinking its own field', async () => {
      const schema = WEATHER_TOOL.function.parameters;
      const body = { response_format: { type: 'json_schema', json_schema: { name: 'w', schema } }, ...forcing('thinkingOnly', 80), temperature: 1, seed: 5 };
      const r = await chat(body);
      expect(r.choices[0].message.reasoning).toBe('Let me think.');
      expect(validArguments(JSON.parse(r.choices[0].message.content))).toBe(true);
      // Thinking off (the prompt closes it): the grammar starts at once and masks the thinking token.
      const off = await chat({ ...body, ...NO_THINKING });
      expect(off.choices[0].message.reasoning).toBeNull();
      expect(validArguments(JSON.parse(off.choices[0].message.content))).toBe(true);
    });
  });

  describe('forced thinking', () => {
    it('<think>…</think>answer: reasoning holds the thinking, content the answer, streamed or not', async () => {
      const r = await chat(forcing('thinkingThenAnswer', 1));
      expect(r.choices[0].message).toMatchObject({ reasoning: 'The sky is clear.', content: 'Sunny.', tool_calls: [] });
      expect(r.usage.completion_tokens_details).toEqual({ reasoning_tokens: 1 });
      expect(await streamChat(forcing('thinkingThenAnswer', 1))).toMatchObject({ reasoning: 'The sky is clear.', content: 'Sunny.', calls: [] });
    });

    it('a tool call after the thinking', async () => {
      const r = await chat({ tools: [WEATHER_TOOL], ...forcing('thinkingThenCall', 1) });
      expect(r.choices[0].message).toMatchObject({ reasoning: 'I need the weather.', content: '\n', tool_calls: [{ function: { name: 'get_weather' } }] });
      const streamed = await streamChat({ tools: [WEATHER_TOOL], ...forcing('thinkingThenCall', 1) });
      expect(streamed).toMatchObject({ reasoning: 'I need the weather.', content: '\n', calls: [{ function: r.choices[0].message.tool_calls[0].function }] });
    });
  });

  describe('tool_choice "none"', () => {
    it('renders the tools into the prompt and answers with plain content', async () => {
      const r = await chat({ tools: [WEATHER_TOOL], tool_choice: 'none', return_prompt_text: true, ...NO_THINKING });
      expect(r.prompt_text).toContain(`<tools>\n${JSON.stringify(WEATHER_TOOL).replace(/":/g, '": ').replace(/,"/g, ', "')}\n</tools>`);
      expect(r.choices[0].message).toMatchObject({ content: expect.any(String), tool_calls: [], reasoning: null });
      expect(r.choices[0].message.content.length).toBeGreaterThan(0);
      expect(r.choices[0].finish_reason).toBe('length');
    });

    it('a history with tool calls and tool results renders and answers', async () => {
      const messages = [
        ...USER,
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18C and sunny' },
      ];
      const r = await chat({ messages, tools: [WEATHER_TOOL], tool_choice: 'none', return_prompt_text: true, ...NO_THINKING });
      expect(r.prompt_text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n');
      expect(r.prompt_text).toContain('<tool_response>\n18C and sunny\n</tool_response>');
      expect(r.choices[0].message.content).toEqual(expect.any(String));
    });
  });

  describe('reasoning', () => {
    it('reasoning_effort "none" turns thinking off in the template: the answer is content', async () => {
      const r = await chat({ reasoning_effort: 'none', return_prompt_text: true });
      expect(r.prompt_text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
      expect(r.choices[0].message.reasoning).toBeNull();
      expect(r.choices[0].message.content.length).toBeGreaterThan(0);
      expect(r.usage.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
    });

    it('thinking on (the default): output without </think> is all reasoning, streamed the same', async () => {
      const full = await chat({ seed: 3 });
      expect(full.choices[0].message.content).toBeNull();
      expect(full.choices[0].message.reasoning.length).toBeGreaterThan(0);
      expect(full.usage.completion_tokens_details).toEqual({ reasoning_tokens: 8 });
      const stream = await s.client.chat.completions.create({
        model: s.model, messages: USER, temperature: 0, max_tokens: 8, seed: 3, stream: true, stream_options: { include_usage: true },
      } as any);
      let reasoning = '';
      let content = '';
      let usage: any = null;
      for await (const chunk of stream as any) {
        reasoning += chunk.choices[0]?.delta?.reasoning ?? '';
        content += chunk.choices[0]?.delta?.content ?? '';
        usage = chunk.usage ?? usage;
      }
      expect({ reasoning, content }).toEqual({ reasoning: full.choices[0].message.reasoning, content: '' });
      expect(usage.completion_tokens_details).toEqual({ reasoning_tokens: 8 });
    });

    it('include_reasoning false leaves the thinking out, logprobs and token ids too', async () => {
      const r = await chat({ include_reasoning: false, logprobs: true, return_token_ids: true });
      expect(r.choices[0].message).toMatchObject({ reasoning: null, content: null });
      expect(r.choices[0].logprobs).toBeNull();
      expect(r.choices[0].token_ids).toBeNull();
      expect(r.usage.completion_tokens).toBe(8);
    });
  });

  describe('the Responses API on the same parsers (qwen3 reasoning)', () => {
    const FLAT_WEATHER = { type: 'function', ...WEATHER_TOOL.function };
    const respond = (fields: Record<string, unknown>): Promise<any> =>
      (s.client.responses.create as any)({ model: s.model, input: USER[0].content, temperature: 0, max_output_tokens: 1, ...fields });

    it('<think>…</think>answer: a reasoning item and a message, streamed the same; reasoning_tokens counted', async () => {
      const fields = { ...forced.forcing('thinkingThenAnswer') };
      const r = await respond(fields);
      expect(r.output.map((item: any) => item.type)).toEqual(['reasoning', 'message']);
      expect(r.output[0].content).toEqual([{ type: 'reasoning_text', text: 'The sky is clear.' }]);
      expect(r.output_text).toBe('Sunny.');
      expect(r.usage.output_tokens_details).toEqual({ reasoning_tokens: 1 });
      const { response } = await streamResponse(s.client, { model: s.model, input: USER[0].content, temperature: 0, max_output_tokens: 1, ...fields });
      expect(withoutIds(response.output)).toEqual(withoutIds(r.output));
      expect(response.usage.output_tokens_details).toEqual({ reasoning_tokens: 1 });
    });

    it('a call after the thinking: a reasoning item and a function_call, streamed the same', async () => {
      const fields = { tools: [FLAT_WEATHER], ...forced.forcing('thinkingThenCall') };
      const r = await respond(fields);
      expect(r.output.map((item: any) => [item.type, item.name])).toEqual([['reasoning', undefined], ['function_call', 'get_weather']]);
      expect(validArguments(JSON.parse(r.output[1].arguments))).toBe(true);
      const { response } = await streamResponse(s.client, { model: s.model, input: USER[0].content, temperature: 0, max_output_tokens: 1, ...fields });
      expect(withoutIds(response.output)).toEqual(withoutIds(r.output));
    });
  });

  describe('bad requests', () => {
    it('answer 400 with the field named', async () => {
      await expectApiError(chat({ tools: [] }), 400, 'tools');
      await expectApiError(chat({ tool_choice: 'auto' }), 400, 'tool_choice');
      await expectApiError(chat({ tools: [WEATHER_TOOL], tool_choice: { type: 'function', function: { name: 'other' } } }), 400, 'tool_choice');
      await expectApiError(chat({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'objekt' } } }] }), 400, 'tools.0.function.parameters');
      await expectApiError(chat({ reasoning_effort: 'extreme' }), 400, 'reasoning_effort', 'Bad Request');
      await expectApiError(s.client.post('/chat/completions/batch', { body: { model: s.model, messages: [USER], tools: [WEATHER_TOOL] } }), 400, 'tools');
    });
  });
});
