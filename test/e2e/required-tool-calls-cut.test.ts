// tool_choice "required" cut by the token limit gives the same answer on every path, through the
// official `openai` client: the calls written whole are calls (arguments that parse), the one cut
// mid-arguments is not sent at all, and finish_reason / status say the limit was hit.
// stories260K keeps appending calls to the array, so every request here is cut.

import OpenAI from 'openai';
import { HealthProbe } from '../helpers/health-probe';
import { whileResponsive } from '../helpers/responsive';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const onModel = needs(defaultTestModel());

const PARAMETERS = { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'] };
const INPUT = 'Once upon a time';
const MAX_TOKENS = 80;
const SEEDS = [1, 2, 3, 4, 5, 6];

type Call = { name: string; arguments: string };

interface PathResult {
  calls: Call[];
  /** finish_reason, or the Responses status with its incomplete_details reason. */
  end: string;
  content: string;
}

const chatRequest = (model: string, seed: number) => ({
  model,
  seed,
  max_tokens: MAX_TOKENS,
  messages: [{ role: 'user' as const, content: INPUT }],
  tools: [{ type: 'function' as const, function: { name: 'get_weather', parameters: PARAMETERS } }],
  tool_choice: 'required' as const,
});

const responsesRequest = (model: string, seed: number) => ({
  model,
  seed,
  max_output_tokens: MAX_TOKENS,
  input: INPUT,
  tools: [{ type: 'function' as const, name: 'get_weather', parameters: PARAMETERS, strict: false }],
  tool_choice: 'required' as const,
});

async function chat(client: OpenAI, model: string, seed: number): Promise<PathResult> {
  const res = await client.chat.completions.create(chatRequest(model, seed));
  const calls = (res.choices[0].message.tool_calls ?? []).map((c) => (c.type === 'function' ? { name: c.function.name, arguments: c.function.arguments } : { name: '', arguments: '' }));
  return { calls, end: res.choices[0].finish_reason, content: res.choices[0].message.content ?? '' };
}

async function chatStream(client: OpenAI, model: string, seed: number): Promise<PathResult> {
  const stream = await client.chat.completions.create({ ...chatRequest(model, seed), stream: true });
  const calls: Call[] = [];
  let end = '';
  let content = '';
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta.content ?? '';
    for (const delta of choice.delta.tool_calls ?? []) {
      calls[delta.index] ??= { name: delta.function?.name ?? '', arguments: '' };
      calls[delta.index].arguments += delta.function?.arguments ?? '';
    }
    end = choice.finish_reason ?? end;
  }
  return { calls, end, content };
}

function responsesResult(response: OpenAI.Responses.Response): PathResult {
  const items = response.output.filter((item) => item.type === 'function_call');
  // A call that is returned is a whole call, whatever the response's status.
  for (const item of items) expect(item.status).toBe('completed');
  const calls = items.map((item) => ({ name: item.name, arguments: item.arguments }));
  const content = response.output.flatMap((item) => (item.type === 'message' ? item.content.map((part) => (part.type === 'output_text' ? part.text : '')) : [])).join('');
  return { calls, end: `${response.status}:${response.incomplete_details?.reason ?? ''}`, content };
}

async function responses(client: OpenAI, model: string, seed: number): Promise<PathResult> {
  return responsesResult(await client.responses.create(responsesRequest(model, seed)));
}

async function responsesStream(client: OpenAI, model: string, seed: number): Promise<PathResult> {
  const stream = await client.responses.create({ ...responsesRequest(model, seed), stream: true });
  let final: OpenAI.Responses.Response | null = null;
  const added: string[] = [];
  for await (const event of stream) {
    if (event.type === 'response.output_item.added' && event.item.type === 'function_call') added.push(event.item.id ?? '');
    if (event.type === 'response.incomplete' || event.type === 'response.completed') final = event.response;
  }
  expect(final).not.toBeNull();
  const result = responsesResult(final!);
  // No item was opened for the call that was cut.
  expect(added).toHaveLength(result.calls.length);
  return result;
}

onModel.describe('tool_choice "required" cut by max_tokens (stories260K)', () => {
  let s: Serving;
  beforeAll(async () => {
    s = await startServing();
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it('chat, chat streaming and Responses (both ways) return the same whole calls and say the limit was hit', async () => {
    const probe = new HealthProbe(s.server.baseUrl);
    let totalCalls = 0;
    await whileResponsive(probe, async () => {
      for (const seed of SEEDS) {
        const plain = await chat(s.client, s.model, seed);
        expect(plain.end).toBe('length');
        expect(plain.content).toBe('');
        for (const call of plain.calls) {
          expect(call.name).toBe('get_weather');
          expect(JSON.parse(call.arguments)).toEqual({ city: expect.any(String) });
        }
        totalCalls += plain.calls.length;
        expect(await chatStream(s.client, s.model, seed)).toEqual(plain);
        const expected = { calls: plain.calls, end: 'incomplete:max_output_tokens', content: '' };
        expect(await responses(s.client, s.model, seed)).toEqual(expected);
        expect(await responsesStream(s.client, s.model, seed)).toEqual(expected);
      }
    });
    // The cut requests did write whole calls before the one that was cut.
    expect(totalCalls).toBeGreaterThan(0);
    const next = await s.client.chat.completions.create({ model: s.model, messages: [{ role: 'user', content: INPUT }], max_tokens: 4 });
    expect(next.choices[0].message.content).toEqual(expect.any(String));
  });
});
