import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BUILTIN_CHAT_TEMPLATE, ChatTemplateError, chatTemplatesFromConfigValue, createChatTemplate,
  detectContentFormat, resolveChatTemplateSource,
} from '../../../src/model/chat-template';
import { createBuiltinTokenizer } from '../../../src/model/tokenizer';
import type { ChatMessage, ChatRenderOptions } from '../../../src/model/types';
import { LLAMA3, OPENAI_PARTS, QWEN_CHATML, WITH_DOCUMENTS } from './chat-template-templates';
import { Template } from '@huggingface/jinja';

const plain: ChatRenderOptions = { addGenerationPrompt: false, continueFinalMessage: false };
const withPrompt: ChatRenderOptions = { addGenerationPrompt: true, continueFinalMessage: false };
const continueFinal: ChatRenderOptions = { addGenerationPrompt: false, continueFinalMessage: true };

const chat: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi "there" & <you>' },
];

const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

describe('ChatML (Qwen-style) template', () => {
  const template = createChatTemplate(QWEN_CHATML, { bos_token: null, eos_token: '<|im_end|>' });

  it('renders messages, with and without the generation prompt', () => {
    const head = '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi "there" & <you><|im_end|>\n';
    expect(template.render(chat, plain)).toBe(head);
    expect(template.render(chat, withPrompt)).toBe(head + '<|im_start|>assistant\n');
  });

  it('passes chat_template_kwargs through (enable_thinking)', () => {
    expect(template.render(chat, { ...withPrompt, extraKwargs: { enable_thinking: false } }))
      .toMatch(/<\|im_start\|>assistant\n<think>\n\n<\/think>\n\n$/);
    expect(template.render(chat, { ...withPrompt, extraKwargs: { enable_thinking: true } }))
      .toMatch(/<\|im_start\|>assistant\n$/);
  });

  it('renders tools, and tool calls with their JSON arguments parsed', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', content: '18C', tool_call_id: 'c1' },
    ];
    const text = template.render(messages, { ...withPrompt, tools: [WEATHER_TOOL] });
    expect(text).toContain('# Tools\n\n<tools>\n{"type": "function", "function": {"name": "get_weather"');
    expect(text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>');
    expect(text).toContain('<tool_response>\n18C\n</tool_response>');
    const bad: ChatMessage[] = [{ role: 'assistant', content: null, tool_calls: [{ function: { name: 'f', arguments: '{oops' } }] }];
    expect(() => template.render(bad, plain)).toThrow(ChatTemplateError);
  });

  it('joins text parts for templates that print the content as a string', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }];
    expect(template.render(messages, plain)).toBe('<|im_start|>user\none\ntwo<|im_end|>\n');
    const image: ChatMessage[] = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }];
    expect(() => template.render(image, plain)).toThrow(/unsupported content part type 'image_url'/);
  });

  it('continues the final assistant message without closing it', () => {
    const messages: ChatMessage[] = [...chat, { role: 'assistant', content: 'Once upon' }];
    expect(template.render(messages, continueFinal)).toMatch(/<\|im_start\|>assistant\nOnce upon$/);
    // The final message keeps its trailing space when the template keeps it.
    const spaced: ChatMessage[] = [...chat, { role: 'assistant', content: 'Once upon ' }];
    expect(template.render(spaced, continueFinal)).toMatch(/assistant\nOnce upon $/);
    expect(() => template.render(messages, { ...continueFinal, addGenerationPrompt: true }))
      .toThrow(/cannot both be true/);
  });

  it('renders a per-request template instead of the model one', () => {
    expect(template.render(chat, { ...plain, template: '{{ messages | length }} {{ eos_token }}' })).toBe('2 <|im_end|>');
    expect(() => template.render(chat, { ...plain, template: '{% if %}' })).toThrow(ChatTemplateError);
  });
});

describe('Llama-3-style template', () => {
  const template = createChatTemplate(LLAMA3, { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' });

  it('renders bos_token, the system message, kwargs and the generation prompt', () => {
    const text = template.render(chat, { ...withPrompt, extraKwargs: { date_string: '01 Jan 2030' } });
    expect(text).toBe('<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nToday Date: 01 Jan 2030\n\n'
      + 'You are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi "there" & <you><|eot_id|>'
      + '<|start_header_id|>assistant<|end_header_id|>\n\n');
    expect(template.render(chat, plain)).toContain('Today Date: 26 Jul 2024');
  });

  it('passes tools (none when absent)', () => {
    expect(template.render(chat, plain)).not.toContain('functions');
    expect(template.render(chat, { ...plain, tools: [WEATHER_TOOL] }))
      .toContain('You have access to the following functions:\n\n{"type": "function", "function": {"name": "get_weather", ');
  });

  it('turns raise_exception into an error carrying its message', () => {
    const robot: ChatMessage[] = [{ role: 'robot', content: 'beep' }];
    expect(() => template.render(robot, plain)).toThrow(ChatTemplateError);
    expect(() => template.render(robot, plain)).toThrow('Unknown role: robot');
  });

  it('cuts after the trimmed final message when the template trims it', () => {
    const messages: ChatMessage[] = [...chat, { role: 'assistant', content: 'The answer is ' }];
    expect(template.render(messages, continueFinal)).toMatch(/<\|start_header_id\|>assistant<\|end_header_id\|>\n\nThe answer is$/);
  });
});

describe('other templates and helpers', () => {
  it('passes documents', () => {
    const template = createChatTemplate(WITH_DOCUMENTS, {});
    const documents = [{ title: 'Paris', text: 'Capital of France.' }, { title: 'Rome', text: 'Capital of Italy.' }];
    expect(template.render([{ role: 'user', content: 'Capitals?' }], { ...withPrompt, documents }))
      .toBe('<|system|>\nDocuments:\n[1] Paris: Capital of France.\n[2] Rome: Capital of Italy.\n<|user|>\nCapitals?\n<|assistant|>\n');
    expect(template.render([{ role: 'user', content: 'Hi' }], plain)).toBe('<|user|>\nHi\n');
  });

  it("gives content parts to templates that loop over them (vLLM's openai format)", () => {
    expect(detectContentFormat(new Template(OPENAI_PARTS).parsed)).toBe('openai');
    expect(detectContentFormat(new Template(QWEN_CHATML).parsed)).toBe('string');
    expect(detectContentFormat(new Template("{% set c = message['content'] %}{% for p in c %}{% endfor %}").parsed)).toBe('openai');
    expect(detectContentFormat(new Template("{% for p in message.content | selectattr('type', 'equalto', 'text') %}{% endfor %}").parsed)).toBe('openai');
    expect(detectContentFormat(new Template("{% for p in m['content'] if p.type == 'text' %}{% endfor %}").parsed)).toBe('openai');
    const template = createChatTemplate(OPENAI_PARTS, {});
    const messages: ChatMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
      { role: 'assistant', content: 'c' },
    ];
    expect(template.render(messages, plain)).toBe('<user>[a][b]<assistant>[c]');
  });

  it('provides strftime_now', () => {
    const template = createChatTemplate("{{ strftime_now('%Y') }}", {});
    expect(template.render([], plain)).toBe(String(new Date().getFullYear()));
  });

  it('rejects a template that does not parse', () => {
    expect(() => createChatTemplate('{% for x in %}', {})).toThrow(/invalid chat template/);
  });

  it('renders the built-in ChatML template into the built-in tokenizer special tokens', () => {
    const template = createChatTemplate(BUILTIN_CHAT_TEMPLATE, {});
    const text = template.render([{ role: 'user', content: 'hi' }], withPrompt);
    expect(text).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    const tokenizer = createBuiltinTokenizer();
    const ids = tokenizer.encode(text);
    expect(ids.filter((id) => tokenizer.isSpecial(id)).map((id) => tokenizer.idToToken(id)))
      .toEqual(['<|im_start|>', '<|im_end|>', '<|im_start|>']);
  });

  it('resolves --chat-template as a file, an inline template, or a mistyped path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chat-template-'));
    const file = join(dir, 't.jinja');
    writeFileSync(file, '{{ 1 + 1 }}');
    expect(resolveChatTemplateSource(file)).toBe('{{ 1 + 1 }}');
    expect(resolveChatTemplateSource("{{ 'a' }}\\n{{ 'b' }}")).toBe("{{ 'a' }}\n{{ 'b' }}");
    expect(() => resolveChatTemplateSource(join(dir, 'missing.jinja'))).toThrow(/looks like a file path/);
    expect(resolveChatTemplateSource(null)).toBeNull();
  });

  it('reads chat_template from tokenizer_config (string or named list)', () => {
    expect(chatTemplatesFromConfigValue('x')).toEqual({ default: 'x', named: {} });
    const named = [{ name: 'default', template: 'd' }, { name: 'tool_use', template: 't' }];
    expect(chatTemplatesFromConfigValue(named)).toEqual({ default: 'd', named: { tool_use: 't' } });
    expect(chatTemplatesFromConfigValue(undefined)).toEqual({ default: null, named: {} });
  });

  it('renders the tool_use variant when the request has tools, the default one otherwise', () => {
    const template = createChatTemplate({ default: 'D:{{ messages[0].content }}', toolUse: 'T:{{ tools | length }}' }, {});
    const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    expect(template.render(hi, plain)).toBe('D:hi');
    expect(template.render(hi, { ...plain, tools: [WEATHER_TOOL] })).toBe('T:1');
    expect(template.sourceFor({ tools: [WEATHER_TOOL] })).toBe('T:{{ tools | length }}');
    expect(template.sourceFor({ tools: null })).toBe('D:{{ messages[0].content }}');
    // A per-request template wins over both.
    expect(template.render(hi, { ...plain, tools: [WEATHER_TOOL], template: 'R' })).toBe('R');
    const toolOnly = createChatTemplate({ default: null, toolUse: 'T' }, {});
    expect(() => toolOnly.render(hi, plain)).toThrow(ChatTemplateError);
  });

  it('--chat-template may name one of the model\'s templates', () => {
    expect(resolveChatTemplateSource('tool_use', { tool_use: 'T' })).toBe('T');
    expect(() => resolveChatTemplateSource('other', { tool_use: 'T' })).toThrow(/looks like a file path/);
  });

  it('--chat-template-content-format overrides the detected format', () => {
    const template = createChatTemplate(QWEN_CHATML, { bos_token: null, eos_token: '<|im_end|>' });
    const parts: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }];
    expect(template.render(parts, { ...plain, contentFormat: 'string' })).toBe('<|im_start|>user\na\nb<|im_end|>\n');
    const loops = createChatTemplate(OPENAI_PARTS, {});
    expect(loops.render(parts, { ...plain, contentFormat: 'openai' })).toBe('<user>[a][b]');
    expect(loops.render([{ role: 'user', content: 'ab' }], { ...plain, contentFormat: 'openai' })).toBe('<user>[ab]');
  });

  it('gives an assistant message\'s thinking to the template as reasoning and reasoning_content', () => {
    const template = createChatTemplate('{{ messages[0].reasoning }}|{{ messages[0].reasoning_content }}', {});
    expect(template.render([{ role: 'assistant', content: 'a', reasoning_content: 'r' }], plain)).toBe('r|r');
    expect(template.render([{ role: 'assistant', content: 'a', reasoning: 's' }], plain)).toBe('s|s');
  });
});
