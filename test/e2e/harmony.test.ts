// gpt-oss's harmony format end to end through the official `openai` client: the real server on
// stories260K whose vocabulary carries the harmony markers and a few whole harmony outputs as
// single tokens (forced-text-model.ts), so the server renders harmony itself (no --chat-template)
// and `logit_bias` makes the model write a chosen output, which --reasoning-parser openai_gptoss
// and --tool-call-parser openai take apart on chat completions and the Responses API.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { collectChatStream } from '../helpers/chat-stream';
import { writeForcedTextModel } from '../helpers/forced-text-model';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { streamResponse, withoutIds } from './responses-helpers';

const MARKERS = ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|call|>', '<|return|>', '<|constrain|>'];
const OUTPUTS = {
  answer: '<|channel|>analysis<|message|>The user says hi.<|end|><|start|>assistant<|channel|>final<|message|>Hello!',
  call: '<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}',
};
type Output = keyof typeof OUTPUTS;
const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

needs(defaultTestModel()).describe('harmony (gpt-oss) chat format and output parsers', () => {
  let server: TestServer;
  let client: OpenAI;
  let tokenOf: Record<Output, number>;
  const forcing = (output: Output) => ({ logit_bias: { [tokenOf[output]]: 100 }, max_tokens: 1, temperature: 0 });
  const chat = (output: Output, fields: Record<string, unknown> = {}): Promise<any> =>
    client.chat.completions.create({ model: 'gpt-oss', messages: [{ role: 'user', content: 'Hi' }], ...forcing(output), ...fields } as any);

  async function streamChat(output: Output, fields: Record<string, unknown> = {}) {
    const stream: any = await client.chat.completions.create({ model: 'gpt-oss', messages: [{ role: 'user', content: 'Hi' }], ...forcing(output), ...fields, stream: true } as any);
    return collectChatStream(stream);
  }

  beforeAll(async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ortllm-harmony-')), 'harmony.gguf');
    const keys = Object.keys(OUTPUTS) as Output[];
    // Control tokens, as in gpt-oss's vocabulary: their text reaches the parsers only because the
    // parsers ask for special tokens kept verbatim (skip_special_tokens and its spaces off).
    const ids = await writeForcedTextModel(defaultTestModel(), path, [...MARKERS, ...keys.map((k) => OUTPUTS[k])], true);
    tokenOf = Object.fromEntries(keys.map((k, i) => [k, ids[MARKERS.length + i]])) as Record<Output, number>;
    server = await startServer(['--served-model-name', 'gpt-oss', '--enable-auto-tool-choice', '--tool-call-parser', 'openai',
      '--reasoning-parser', 'openai_gptoss'], { model: path });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it('renders the prompt in harmony, with tools as a TypeScript namespace and the reasoning effort', async () => {
    const r = await chat('answer', {
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], tools: [WEATHER], reasoning_effort: 'low', return_prompt_text: true,
    });
    const text: string = r.prompt_text;
    expect(text).toContain('Reasoning: low');
    expect(text).toContain('<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools');
    expect(text).toContain('type get_weather = (_: {\ncity: string,\n}) => any;');
    expect(text).toContain('<|start|>user<|message|>Hi<|end|><|start|>assistant');
  });

  it('chat: analysis is reasoning, final is content, streamed the same', async () => {
    const r = await chat('answer');
    expect(r.choices[0].message).toMatchObject({ content: 'Hello!', reasoning: 'The user says hi.' });
    expect(await streamChat('answer')).toEqual({ reasoning: 'The user says hi.', content: 'Hello!', calls: [] });
  });

  it('chat: a commentary message to functions.get_weather is a tool call, streamed the same', async () => {
    const r = await chat('call', { tools: [WEATHER] });
    const message = r.choices[0].message;
    expect(message.reasoning).toBe('Need the weather.');
    expect(message.content).toBeNull();
    expect(message.tool_calls).toEqual([{ id: expect.stringMatching(/^chatcmpl-tool-/), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    expect(await streamChat('call', { tools: [WEATHER] })).toEqual({ reasoning: 'Need the weather.', content: '', calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
  });

  it('Responses API: reasoning and message items, reasoning and function_call items, streamed the same', async () => {
    const body = (output: Output, extra: Record<string, unknown> = {}) => ({
      model: 'gpt-oss', input: 'Hi', temperature: 0, max_output_tokens: 1, logit_bias: { [tokenOf[output]]: 100 }, ...extra,
    });
    const answer: any = await (client.responses.create as any)(body('answer'));
    expect(answer.output.map((i: any) => i.type)).toEqual(['reasoning', 'message']);
    expect(answer.output[0].content[0].text).toBe('The user says hi.');
    expect(answer.output_text).toBe('Hello!');
    const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER.function.parameters }];
    const call: any = await (client.responses.create as any)(body('call', { tools }));
    expect(call.output.map((i: any) => i.type)).toEqual(['reasoning', 'function_call']);
    expect(call.output[1]).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    for (const [output, extra, plain] of [['answer', {}, answer], ['call', { tools }, call]] as const) {
      const { response } = await streamResponse(client, body(output, extra));
      expect(withoutIds(response.output)).toEqual(withoutIds(plain.output));
    }
  });
});
