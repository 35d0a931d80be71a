// Tool calling and reasoning output end to end: the real server on stories260K with a
// Hermes-style (Qwen2.5 / Qwen3) chat template written for the test, --enable-auto-tool-choice
// --tool-call-parser hermes --reasoning-parser qwen3, through the official `openai` client.

import { HAVE_MODEL, SERVER_START_TIMEOUT_MS, expectApiError, startServing, type Serving } from './completions-helpers';

/** Qwen2.5's tool format and Qwen3's thinking switch, in a few lines of Jinja. */
export const HERMES_TEMPLATE = [
  '{%- if tools %}{{ "<|im_start|>system\\n# Tools\\n<tools>" }}{% for tool in tools %}{{ "\\n" }}{{ tool | tojson }}{% endfor %}',
  '{{ "\\n</tools><|im_end|>\\n" }}{% endif %}',
  '{%- for message in messages %}',
  "{%- if message.role == 'assistant' and message.tool_calls %}{{ '<|im_start|>assistant' }}",
  '{%- for call in message.tool_calls %}{{ "\\n<tool_call>\\n" }}{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}',
  '{{ "\\n</tool_call>" }}{% endfor %}{{ "<|im_end|>\\n" }}',
  "{%- elif message.role == 'tool' %}{{ '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}",
  "{%- else %}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{% endif %}",
  '{%- endfor %}',
  '{%- if add_generation_prompt %}{{ "<|im_start|>assistant\\n" }}',
  '{%- if enable_thinking is defined and enable_thinking is false %}{{ "<think>\\n\\n</think>\\n\\n" }}{% endif %}{% endif %}',
].join('');

export const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false },
  },
};

const maybe = HAVE_MODEL ? describe : describe.skip;
const USER = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };

maybe('tool calling and reasoning (hermes + qwen3 parsers)', () => {
  let s: Serving;
  const chat = (body: Record<string, unknown>): Promise<any> =>
    s.client.chat.completions.create({ model: s.model, messages: USER, temperature: 0, max_tokens: 8, ...body } as any);

  beforeAll(async () => {
    s = await startServing(['--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--reasoning-parser', 'qwen3'], HERMES_TEMPLATE);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

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
