// Structured outputs on a real server (stories260K, xgrammar) through every generation route:
// /v1/completions, /v1/chat/completions (streaming and not, with the official openai client's
// response_format) and /inference/v1/generate (tokens out, checked after detokenizing). Sampled
// outputs (temperature > 0, several seeds) are validated with ajv; bad constraints are 400s with
// `param`, and never disturb a request running beside them.

import Ajv from 'ajv';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, expectApiError, sseFrames, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer' },
    mood: { enum: ['happy', 'sad'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
  },
  required: ['name', 'age', 'mood', 'tags'],
  additionalProperties: false,
};
const SEEDS = [11, 12, 13];
const validate = new Ajv().compile(SCHEMA);
const expectValid = (text: string) => {
  const value = JSON.parse(text);
  expect(validate(value)).toBe(true);
};
// Compact JSON (the server flag below) keeps a 260K-parameter story model from wandering in
// whitespace, which xgrammar's default (any whitespace, as vLLM) allows without end.
const COMPACT_SERVER = ['--structured-outputs-config', '{"backend": "xgrammar", "disable_any_whitespace": true}'];

onModel.describe('structured outputs on the HTTP routes (stories260K)', () => {
  let s: Serving;
  const sampling = { temperature: 0.9, max_tokens: 150 };

  beforeAll(async () => {
    s = await startServing(['--enable-scale-out', ...COMPACT_SERVER]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it('completions: structured_outputs.json → every sampled output validates, finish_reason stop', async () => {
    for (const seed of SEEDS) {
      const res = await s.client.completions.create({
        model: s.model,
        prompt: 'Once upon a time',
        ...sampling,
        seed,
        structured_outputs: { json: SCHEMA },
      } as never);
      expectValid(res.choices[0].text);
      expect(res.choices[0].finish_reason).toBe('stop');
    }
  });

  it('completions: response_format json_schema, choice, regex and grammar; the deprecated guided_* aliases', async () => {
    const text = async (extra: Record<string, unknown>, seed = 1) =>
      (await s.client.completions.create({ model: s.model, prompt: 'Lily said', ...sampling, seed, ...extra } as never)).choices[0].text;
    expectValid(await text({ response_format: { type: 'json_schema', json_schema: { name: 'person', schema: SCHEMA } } }));
    for (const seed of SEEDS) {
      expect(['red', 'green', 'blue']).toContain(await text({ structured_outputs: { choice: ['red', 'green', 'blue'] } }, seed));
      expect(await text({ structured_outputs: { regex: '[A-Z][a-z]{1,8} is [0-9]{1,2}' } }, seed)).toMatch(/^[A-Z][a-z]{1,8} is [0-9]{1,2}$/);
      expect(await text({ structured_outputs: { grammar: 'root ::= greeting " " name\ngreeting ::= "hi" | "hello"\nname ::= [a-z]{2,5}' } }, seed)).toMatch(/^(hi|hello) [a-z]{2,5}$/);
      expect(await text({ guided_choice: ['yes', 'no'], guided_decoding_backend: 'xgrammar' }, seed)).toMatch(/^(yes|no)$/);
      expect(await text({ guided_regex: '[0-9]{3}' }, seed)).toMatch(/^[0-9]{3}$/);
      expectValid(await text({ guided_json: JSON.stringify(SCHEMA) }, seed));
    }
  });

  it('chat: response_format json_schema with the openai client, non-streaming and streaming', async () => {
    for (const seed of SEEDS) {
      const messages = [{ role: 'user' as const, content: 'Tell me about a girl.' }];
      const res = await s.client.chat.completions.create({
        model: s.model,
        messages,
        ...sampling,
        seed,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: SCHEMA, strict: true } },
      });
      expectValid(res.choices[0].message.content!);
      expect(res.choices[0].finish_reason).toBe('stop');

      const stream = await s.client.chat.completions.create({
        model: s.model,
        messages,
        ...sampling,
        seed,
        stream: true,
        structured_outputs: { json: SCHEMA },
      } as never);
      let content = '';
      let finish: string | null = null;
      for await (const chunk of stream as unknown as AsyncIterable<{ choices: Array<{ delta: { content?: string }; finish_reason: string | null }> }>) {
        content += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expectValid(content);
      expect(finish).toBe('stop');
    }
  });

  it('chat: response_format json_object gives a JSON object', async () => {
    const res = await s.client.chat.completions.create({
      model: s.model,
      messages: [{ role: 'user', content: 'Say {}' }],
      temperature: 0.8,
      seed: 5,
      max_tokens: 150,
      response_format: { type: 'json_object' },
      // A story model never closes a free-form object by itself: favour the closing tokens.
      logit_bias: await closingBias(s),
    } as never);
    const value = JSON.parse(res.choices[0].message.content!);
    expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
  });

  it('/inference/v1/generate: sampling_params.structured_outputs constrains the token ids', async () => {
    const prompt = (await s.post('/tokenize', { prompt: 'Once upon a time' })).json.tokens;
    for (const seed of SEEDS) {
      const res = await s.post('/inference/v1/generate', {
        token_ids: prompt,
        sampling_params: { ...sampling, seed, structured_outputs: { json: SCHEMA } },
      });
      expect(res.status).toBe(200);
      const ids: number[] = res.json.choices[0].token_ids;
      expect(res.json.choices[0].finish_reason).toBe('stop');
      const text = (await s.post('/detokenize', { tokens: ids })).json.prompt;
      expectValid(text);
    }
    // Streaming, text mode, a regex.
    const res = await s.post('/inference/v1/generate', {
      token_ids: prompt,
      stream: true,
      output_mode: 'text',
      sampling_params: { ...sampling, seed: 3, structured_outputs: { regex: '(cat|dog) [0-9]{2}' } },
    });
    const text = sseFrames(res.text)
      .map((f) => f.choices[0]?.text ?? '')
      .join('');
    expect(text).toMatch(/^(cat|dog) [0-9]{2}$/);
  });

  it('/v1/completions/render carries structured_outputs in the rendered sampling_params', async () => {
    const res = await s.post('/v1/completions/render', { model: s.model, prompt: 'Hi', response_format: { type: 'json_object' } });
    expect(res.status).toBe(200);
    const rendered = Array.isArray(res.json) ? res.json[0] : res.json;
    expect(rendered.sampling_params.structured_outputs).toEqual({ json_object: true });
  });

  it('/metrics counts grammar compiles and cache hits', async () => {
    expect(await s.metric('vllm:structured_output_compile_time_seconds_count')).toBeGreaterThan(0);
    const queries = await s.metric('vllm:structured_output_grammar_cache_queries_total');
    const hits = await s.metric('vllm:structured_output_grammar_cache_hits_total');
    // The same schema was asked for many times above: most lookups hit.
    expect(hits).toBeGreaterThan(0);
    expect(queries).toBeGreaterThan(hits);
  });

  describe('bad constraints → 400 with param, while another request streams on', () => {
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ['an invalid JSON schema', { structured_outputs: { json: { type: 'objectx' } } }, 'structured_outputs', /Invalid JSON schema: .*objectx/],
      ['a schema that is not JSON', { structured_outputs: { json: '{"type": ' } }, 'structured_outputs', /not valid JSON/],
      ['an unparsable grammar', { structured_outputs: { grammar: 'root ::= "a" | missing' } }, 'structured_outputs', /Invalid grammar/],
      ['a regex xgrammar cannot compile', { structured_outputs: { regex: '(ab' } }, 'structured_outputs', /Invalid regex/],
      ['an empty choice', { structured_outputs: { choice: [] } }, 'structured_outputs', /must not be empty/],
      ['two kinds at once', { structured_outputs: { regex: 'a', json_object: true } }, 'structured_outputs', /only use one kind/],
      ['structured_outputs and response_format', { structured_outputs: { regex: 'a' }, response_format: { type: 'json_object' } }, 'response_format', /Only one of/],
      ['an invalid response_format schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 3 } } } }, 'response_format', /Invalid JSON schema/],
      ['a bad guided_json', { guided_json: { type: 'nope' } }, 'guided_json', /Invalid JSON schema/],
      ['an unknown guided_decoding_backend', { guided_decoding_backend: 'outlines', guided_regex: 'a' }, 'guided_decoding_backend', /not available/],
      ['whitespace_pattern', { structured_outputs: { json_object: true, whitespace_pattern: '[ ]?' } }, 'structured_outputs', /whitespace_pattern/],
      ['beam search', { structured_outputs: { regex: 'a' }, use_beam_search: true, n: 2, temperature: 0 }, 'use_beam_search', /beam search/],
    ];
    it.each(cases)('%s', async (_name, body, param, message) => {
      const err = await expectApiError(s.client.completions.create({ model: s.model, prompt: 'Hi', max_tokens: 4, ...body } as never), 400, param);
      expect(err.message).toMatch(message);
    });

    it('the same errors on chat and generate; a streaming neighbour finishes untouched', async () => {
      const neighbour = s.post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 64, ignore_eos: true, temperature: 0, stream: true });
      await expectApiError(
        s.client.chat.completions.create({ model: s.model, messages: [{ role: 'user', content: 'x' }], stream: true, structured_outputs: { grammar: 'root ::= (' } } as never),
        400,
        'structured_outputs',
      );
      const generate = await s.post('/inference/v1/generate', { token_ids: [1, 2], sampling_params: { structured_outputs: { choice: [] } } });
      expect(generate.status).toBe(400);
      expect(generate.json.error.param).toBe('structured_outputs');
      const frames = sseFrames((await neighbour).text); // ends with [DONE]
      const finish = frames.map((f) => f.choices[0]?.finish_reason).filter(Boolean);
      expect(finish).toEqual(['length']);
    });
  });
});

/** logit_bias favouring the tokens that spell '"' and '}' mid-text (looked up through /tokenize). */
async function closingBias(s: Serving): Promise<Record<string, number>> {
  const ids = async (text: string): Promise<number[]> => (await s.post('/tokenize', { prompt: text, add_special_tokens: false })).json.tokens;
  const word = new Set(await ids('a'));
  const bias: Record<string, number> = {};
  for (const text of ['a"}', 'a "}', 'a" }']) for (const id of await ids(text)) if (!word.has(id)) bias[String(id)] = 10;
  return bias;
}
