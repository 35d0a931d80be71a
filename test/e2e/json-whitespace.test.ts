// JSON that ends: with default settings the whitespace between JSON tokens is bounded, so a
// sampled stories260K run writes its object and stops instead of spaces until max_tokens; with
// `max_whitespace: null` (vLLM's unbounded whitespace) the same requests do not finish.
// `disable_any_whitespace` writes `,` and `:` with nothing after them. Through the official
// `openai` client: response_format, tool_choice "required" / named, Responses function tools.

import OpenAI from 'openai';
import { HealthProbe } from '../helpers/health-probe';
import { whileResponsive } from '../helpers/responsive';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const onModel = needs(defaultTestModel());

const PERSON = { type: 'object', properties: { name: { type: 'string', maxLength: 16 }, age: { type: 'integer', minimum: 0, maximum: 120 } }, required: ['name', 'age'] };
const PARAMETERS = { type: 'object', properties: { city: { type: 'string', maxLength: 16 } }, required: ['city'] };
const CHAT_TOOLS = [{ type: 'function' as const, function: { name: 'get_weather', parameters: PARAMETERS } }];
const MESSAGES = [{ role: 'user' as const, content: 'Once upon a time' }];
const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
const MAX_TOKENS = 128;

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};
/** The text with its JSON strings emptied (an unfinished one cut off): tokens and the whitespace between them. */
const outsideStrings = (text: string): string => text.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/"[^"]*$/, '');

type Kind = 'json_schema' | 'json_object' | 'required' | 'named' | 'responses';
const KINDS: Kind[] = ['json_schema', 'json_object', 'required', 'named', 'responses'];

interface JsonOutput {
  /** Ended before max_tokens with at least one JSON text. */
  finished: boolean;
  /** The JSON texts (response_format: also when cut off). */
  texts: string[];
}

async function jsonOutput(client: OpenAI, model: string, kind: Kind, seed: number): Promise<JsonOutput> {
  const common = { model, messages: MESSAGES, max_tokens: MAX_TOKENS, seed };
  if (kind === 'json_schema' || kind === 'json_object') {
    const format = kind === 'json_object' ? { type: 'json_object' as const } : { type: 'json_schema' as const, json_schema: { name: 'person', schema: PERSON } };
    const res = await client.chat.completions.create({ ...common, response_format: format });
    return { finished: res.choices[0].finish_reason === 'stop', texts: [res.choices[0].message.content ?? ''] };
  }
  if (kind === 'responses') {
    const res = await client.responses.create({
      model, input: 'Once upon a time', max_output_tokens: MAX_TOKENS, seed, parallel_tool_calls: false, tool_choice: 'required',
      tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS, strict: false }],
    } as never);
    const texts = res.output.flatMap((item) => (item.type === 'function_call' ? [item.arguments] : []));
    return { finished: res.status === 'completed' && texts.length > 0, texts };
  }
  const toolChoice = kind === 'required' ? ('required' as const) : { type: 'function' as const, function: { name: 'get_weather' } };
  const res = await client.chat.completions.create({ ...common, tools: CHAT_TOOLS, tool_choice: toolChoice, parallel_tool_calls: false });
  const texts = (res.choices[0].message.tool_calls ?? []).map((call) => (call.type === 'function' ? call.function.arguments : ''));
  return { finished: res.choices[0].finish_reason !== 'length' && texts.length > 0, texts };
}

/** Per kind: how many seeds finished (with valid JSON, checked), and every JSON text. */
async function finishedCounts(s: Serving): Promise<{ counts: Record<Kind, number>; texts: string[] }> {
  const counts = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
  const texts: string[] = [];
  for (const kind of KINDS) {
    const outputs = await Promise.all(SEEDS.map((seed) => jsonOutput(s.client, s.model, kind, seed)));
    for (const output of outputs) {
      texts.push(...output.texts);
      if (!output.finished) continue;
      expect(output.texts.filter((text) => !isJson(text))).toEqual([]);
      counts[kind]++;
    }
  }
  return { counts, texts };
}

onModel.describe('JSON whitespace (stories260K)', () => {
  it('by default JSON whitespace is bounded and the requests end; unbounded (vLLM) they run to max_tokens', async () => {
    const bounded = await startServing();
    try {
      const probe = new HealthProbe(bounded.server.baseUrl);
      const { counts, texts } = await whileResponsive(probe, () => finishedCounts(bounded));
      // Measured over 200 seeds: 85-92% finish with the default bound, 0% without one. Any
      // object (json_object) still runs long in its strings, but not in whitespace.
      for (const kind of KINDS.filter((k) => k !== 'json_object')) expect({ kind, finished: counts[kind] >= SEEDS.length / 2 }).toEqual({ kind, finished: true });
      for (const text of texts) expect(outsideStrings(text)).not.toMatch(/\s\s/);
      const next = await bounded.client.chat.completions.create({ model: bounded.model, messages: MESSAGES, max_tokens: 4 });
      expect(next.choices[0].message.content).toEqual(expect.any(String));
    } finally {
      await bounded.server.stop();
    }
    const unbounded = await startServing(['--structured-outputs-config', '{"max_whitespace": null}']);
    try {
      const { counts } = await finishedCounts(unbounded);
      expect(counts.json_schema + counts.required).toBeLessThanOrEqual(2);
    } finally {
      await unbounded.server.stop();
    }
  }, 2 * SERVER_START_TIMEOUT_MS);

  describe('disable_any_whitespace', () => {
    let s: Serving;
    beforeAll(async () => {
      s = await startServing(['--structured-outputs-config', '{"disable_any_whitespace": true}']);
    }, SERVER_START_TIMEOUT_MS);
    afterAll(() => s?.server.stop());

    it('writes compact JSON: "," and ":" with nothing after them (vLLM adds a space)', async () => {
      const { counts, texts } = await finishedCounts(s);
      expect(counts.json_schema + counts.required + counts.named).toBeGreaterThan(0);
      for (const text of texts) expect(outsideStrings(text)).not.toMatch(/\s/);
    });
  });
});
