// Qwen3's chat format end to end through the official `openai` client: the server renders the
// Qwen3-style template of the fixtures (enable_thinking through chat_template_kwargs), and the
// model (stories260K with whole Qwen3 outputs as single tokens, forced by logit_bias) writes
// thinking and Hermes tool calls that --reasoning-parser qwen3 and --tool-call-parser hermes split.

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectChatStream } from '../helpers/chat-stream';
import { writeForcedTextModel } from '../helpers/forced-text-model';
import { needs } from '../helpers/needs';
import { defaultTestModel, expectApiError, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/chat-templates', name), 'utf8');
const QWEN3_TEMPLATE = fixture('qwen3-style.jinja');
const OUTPUTS = {
  thinking: '<think>\nThe user greets me.\n</think>\n\nHello!',
  answer: 'Hello!',
  thinkingThenCall: '<think>\nI need the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
};
type Output = keyof typeof OUTPUTS;
const WEATHER = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

needs(defaultTestModel()).describe('Qwen3 chat: enable_thinking, qwen3 reasoning and hermes tool parsers', () => {
  let s: Serving;
  let tokenOf: Record<Output, number>;
  const request = (output: Output, fields: Record<string, unknown>) => ({
    model: s.model, messages: [{ role: 'user', content: 'Hi' }], temperature: 0, max_tokens: 1, logit_bias: { [tokenOf[output]]: 100 }, ...fields,
  });
  const chat = (output: Output, fields: Record<string, unknown> = {}): Promise<any> => s.client.chat.completions.create(request(output, fields) as any);

  async function streamChat(output: Output, fields: Record<string, unknown> = {}) {
    const stream: any = await s.client.chat.completions.create({ ...request(output, fields), stream: true } as any);
    return collectChatStream(stream);
  }

  beforeAll(async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ortllm-qwen3-')), 'qwen3-forced.gguf');
    const keys = Object.keys(OUTPUTS) as Output[];
    const ids = await writeForcedTextModel(defaultTestModel(), path, keys.map((k) => OUTPUTS[k]));
    tokenOf = Object.fromEntries(keys.map((k, i) => [k, ids[i]])) as Record<Output, number>;
    s = await startServing(['--served-model-name', 'qwen3', '--trust-request-chat-template', '--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--reasoning-parser', 'qwen3'],
      { model: path }, QWEN3_TEMPLATE);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it('thinking on (the default): the text up to </think> is reasoning, streamed the same', async () => {
    const r = await chat('thinking', { return_prompt_text: true });
    expect(r.prompt_text.endsWith('<|im_start|>assistant\n')).toBe(true);
    expect(r.choices[0].message).toMatchObject({ reasoning: '\nThe user greets me.\n', content: '\n\nHello!' });
    expect(await streamChat('thinking')).toEqual({ reasoning: '\nThe user greets me.\n', content: '\n\nHello!', calls: [] });
  });

  it('enable_thinking false through chat_template_kwargs: the prompt closes the thinking, the output is all content', async () => {
    const off = { chat_template_kwargs: { enable_thinking: false }, return_prompt_text: true };
    const r = await chat('answer', off);
    expect(r.prompt_text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(r.choices[0].message.content).toBe('Hello!');
    expect(r.choices[0].message.reasoning ?? null).toBeNull();
    expect(await streamChat('answer', { chat_template_kwargs: { enable_thinking: false } })).toEqual({ reasoning: '', content: 'Hello!', calls: [] });
  });

  it('thinking then a <tool_call>: reasoning and a tool call, streamed the same', async () => {
    const r = await chat('thinkingThenCall', { tools: [WEATHER] });
    const message = r.choices[0].message;
    expect(message.reasoning).toBe('\nI need the weather.\n');
    expect(message.content).toBe('\n\n'); // what lies between </think> and <tool_call>, as vLLM keeps it
    expect(message.tool_calls.map((c: any) => c.function)).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
    expect(await streamChat('thinkingThenCall', { tools: [WEATHER] }))
      .toEqual({ reasoning: '\nI need the weather.\n', content: '\n\n', calls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }] });
  });

  it("a template's raise_exception (Gemma 2 refusing a system message) is a 400 with the template's words", async () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }];
    const err = await expectApiError(chat('answer', { messages, chat_template: fixture('gemma2-style.jinja') }), 400, 'messages');
    expect(err.message).toContain('System role not supported');
  });
});
