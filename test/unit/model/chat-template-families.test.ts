// Chat templates of the new families rendered by @huggingface/jinja: a template written for the
// tests with the constructs Qwen3's uses (namespace(), messages[::-1], tojson, startswith /
// endswith / split / strip, <think> handling, enable_thinking), and Gemma's turn format (roles
// user/model, the system text folded into the first user turn, raise_exception on bad order).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createChatTemplate } from '../../../src/model/chat-template';
import type { ChatMessage, ChatRenderOptions } from '../../../src/model/types';

const fixture = (name: string) => readFileSync(join(__dirname, '../../fixtures/chat-templates', name), 'utf8');
const options = (extra: Partial<ChatRenderOptions> = {}): ChatRenderOptions => ({ addGenerationPrompt: true, continueFinalMessage: false, ...extra });

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

describe('Qwen3-style template', () => {
  const qwen3 = createChatTemplate(fixture('qwen3-style.jinja'), { eos_token: '<|im_end|>' });

  it('closes the thinking in the prompt only when enable_thinking is false', () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    expect(qwen3.render(messages, options())).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    expect(qwen3.render(messages, options({ extraKwargs: { enable_thinking: true } }))).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    expect(qwen3.render(messages, options({ extraKwargs: { enable_thinking: false } })))
      .toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  });

  it('keeps thinking only after the last real query, reads it from the content or reasoning_content, groups tool responses', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Q1' },
      { role: 'assistant', content: '<think>\nold thought\n</think>\n\nA1' },
      { role: 'user', content: 'Q2' },
      { role: 'assistant', content: '', reasoning_content: 'need two cities', tool_calls: [
        { id: 'a', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } },
        { id: 'b', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Rome"}' } },
      ] },
      { role: 'tool', content: '18C' },
      { role: 'tool', content: '20C' },
    ];
    expect(qwen3.render(messages, options({ tools: [WEATHER] }))).toBe(
      `<|im_start|>system\nBe brief.\n\n# Tools\n\nFunction signatures are inside <tools></tools>:\n<tools>\n${JSON.stringify(WEATHER).replace(/":/g, '": ').replace(/,"/g, ', "')}`
      + '\n</tools>\n\nReturn each call as <tool_call>{"name": ..., "arguments": ...}</tool_call><|im_end|>\n'
      + '<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n'
      + '<|im_start|>assistant\n<think>\nneed two cities\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
      + '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>\n'
      + '<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n<tool_response>\n20C\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
  });

  it('does not count a user turn that only carries a tool response as the last query', () => {
    const text = qwen3.render([
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: '<think>kept</think>call' },
      { role: 'user', content: '<tool_response>\nx\n</tool_response>' },
    ], options());
    expect(text).toContain('<|im_start|>assistant\n<think>\nkept\n</think>\n\ncall<|im_end|>');
  });
});

describe('Gemma-style template', () => {
  const gemma = createChatTemplate(fixture('gemma-style.jinja'), { bos_token: '<bos>', eos_token: '<eos>' });

  it('writes user/model turns with the system text folded into the first user turn', () => {
    expect(gemma.render([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: ' Hello! ' },
      { role: 'user', content: 'Bye' },
    ], options())).toBe('<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n'
      + '<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n');
  });

  it('raises the template error for turns out of order', () => {
    expect(() => gemma.render([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }], options()))
      .toThrow(/Conversation roles must alternate user\/assistant/);
  });
});

describe('Gemma 2-style template', () => {
  const gemma2 = createChatTemplate(fixture('gemma2-style.jinja'), { bos_token: '<bos>', eos_token: '<eos>' });

  it('renders user/model turns and refuses a system message with its own words', () => {
    expect(gemma2.render([{ role: 'user', content: 'Hi ' }, { role: 'assistant', content: 'Yo' }, { role: 'user', content: 'Bye' }], options()))
      .toBe('<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n');
    expect(() => gemma2.render([{ role: 'system', content: 's' }, { role: 'user', content: 'u' }], options())).toThrow('System role not supported');
  });
});
