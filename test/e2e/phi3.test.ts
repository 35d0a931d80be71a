// Phi-3 family end to end through the official `openai` client: a seeded random Phi-4-mini-shaped
// GGUF (partial rotary, LongRoPE, tied head) served by the real server decodes greedily what the
// float64 reference of its HF checkpoint decodes; and `--tool-call-parser phi4_mini_json` turns
// Phi-4-mini's `functools[...]` output into tool_calls, whole and streamed (the output forced
// through a stories260K copy whose one token writes the call, test/helpers/forced-text-model.ts).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PHI4_MINI_TOY, writePhi3Model, type Phi3Files } from '../../bench/random-phi3';
import { needs } from '../helpers/needs';
import { referencePhi3 } from '../helpers/reference-phi3';
import { argmax } from '../helpers/runner-driver';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';
import { startForcedServing, type ForcedServing } from './forced-serving';

const onModel = needs(defaultTestModel());

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

onModel.describe('phi3 model served (Phi-4-mini shape)', () => {
  let dir: string;
  let files: Phi3Files;
  let s: Serving;
  const prompt = [1, 17, 250, 3, 99, 400, 12, 300];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-phi3-'));
    files = await writePhi3Model(dir, PHI4_MINI_TOY, defaultTestModel());
    s = await startServing(['--max-model-len', '4096'], { model: files.gguf });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await s?.server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('greedy completion of a token-id prompt is the reference decode (long LongRoPE table at max_model_len 4096)', async () => {
    const r: any = await s.client.completions.create({ model: s.model, prompt, max_tokens: 6, temperature: 0, logprobs: 1, return_tokens_as_token_ids: true } as any);
    const ids = r.choices[0].logprobs.tokens.map((t: string) => Number(t.replace('token_id:', '')));
    const tokens = [...prompt];
    for (let i = 0; i < 6; i++) {
      const logits = referencePhi3(files.configJson, files.tensors, tokens, { maxModelLen: 4096 });
      tokens.push(argmax(logits[logits.length - 1]));
    }
    expect(ids).toEqual(tokens.slice(prompt.length));
  });
});

const CALL = 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]';

onModel.describe('phi4_mini_json tool parser', () => {
  let forced: ForcedServing<'call' | 'textThenCall'>;
  const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }];

  beforeAll(async () => {
    forced = await startForcedServing({ call: CALL, textThenCall: `Checking.\n${CALL}` }, ['--enable-auto-tool-choice', '--tool-call-parser', 'phi4_mini_json']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => forced?.serving.server.stop());

  it('functools[...] becomes tool_calls; text before it stays content', async () => {
    const { client, model } = forced.serving;
    const r = await client.chat.completions.create({ model, messages, tools: [WEATHER_TOOL], temperature: 0, max_tokens: 1, ...forced.forcing('call') });
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(r.choices[0].message.content).toBeNull();
    expect(r.choices[0].message.tool_calls).toMatchObject([{ type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }]);
    const mixed = await client.chat.completions.create({ model, messages, tools: [WEATHER_TOOL], temperature: 0, max_tokens: 1, ...forced.forcing('textThenCall') });
    expect(mixed.choices[0].message).toMatchObject({ content: 'Checking.\n', tool_calls: [{ function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] });
  });

  it('streamed: the deltas assemble to the same call', async () => {
    const { client, model } = forced.serving;
    // The list's closing ']' is a stop string: the engine says "stop", the API "tool_calls" (a
    // stream cut by max_tokens keeps "length", as vLLM's does).
    const body = { model, messages, tools: [WEATHER_TOOL], temperature: 0, max_tokens: 3, stop: [']'], include_stop_str_in_output: true, ...forced.forcing('call') };
    const stream = await client.chat.completions.create({ ...body, stream: true } as any);
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream as any) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += call.function?.name ?? '';
        args += call.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect({ name, args, finish }).toEqual({ name: 'get_weather', args: '{"city": "Paris"}', finish: 'tool_calls' });
  });
});
