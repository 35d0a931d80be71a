// Structured outputs under --speculative-config (prompt lookup) on the real server, through the
// official openai client: greedy outputs of completions and chat (JSON schema, regex, choice;
// streamed and not, with logprobs) are those of a server without speculation, logprobs to 1e-5
// (verification rows attend one by one, as decodes do). Drafts proposed and accepted for
// constrained sequences are counted here and in test/unit/engine/speculative/.

import Ajv from 'ajv';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';
import { KID_REGEX as REGEX, KID_SCHEMA as SCHEMA, LOOKUP_TEXT } from '../helpers/constrained-outputs';

const onModel = needs(defaultTestModel());

const COMPACT = ['--structured-outputs-config', '{"backend": "xgrammar", "disable_any_whitespace": true}'];
const NGRAM = ['--speculative-config', JSON.stringify({ method: 'ngram', num_speculative_tokens: 4, prompt_lookup_max: 3, prompt_lookup_min: 1 })];
const PROMPT = `${LOOKUP_TEXT} Once upon a time`;

interface Outputs {
  texts: unknown[];
  topLogprobs: Array<Record<string, number>>;
}

/** Every case's greedy output, and the top logprobs of the one that asks for them. */
async function outputs(s: Serving): Promise<Outputs> {
  const greedy = { model: s.model, temperature: 0, max_tokens: 100 };
  const out: unknown[] = [];
  const json = await s.client.completions.create({ ...greedy, prompt: PROMPT, logprobs: 2, structured_outputs: { json: SCHEMA } } as never);
  expect(new Ajv().compile(SCHEMA)(JSON.parse(json.choices[0].text))).toBe(true);
  out.push(json.choices[0].text);
  const regex = await s.client.completions.create({ ...greedy, prompt: PROMPT, structured_outputs: { regex: REGEX } } as never);
  expect(regex.choices[0].text).toMatch(new RegExp(`^${REGEX}$`));
  out.push(regex.choices[0].text);
  const messages = [{ role: 'user' as const, content: PROMPT }];
  const chat = await s.client.chat.completions.create({ ...greedy, messages, response_format: { type: 'json_schema', json_schema: { name: 'kid', schema: SCHEMA } } });
  out.push(chat.choices[0].message.content);
  const stream = await s.client.chat.completions.create({ ...greedy, messages, stream: true, structured_outputs: { choice: ['Lily and Tom with the dog', 'Tom and the dog'] } } as never);
  let streamed = '';
  for await (const chunk of stream as unknown as AsyncIterable<{ choices: Array<{ delta: { content?: string } }> }>) streamed += chunk.choices[0]?.delta.content ?? '';
  out.push(streamed);
  return { texts: out, topLogprobs: json.choices[0].logprobs!.top_logprobs as Array<Record<string, number>> };
}

onModel.describe('structured outputs under n-gram speculation on the HTTP routes (stories260K)', () => {
  it(
    'greedy outputs equal those of a server without speculation',
    async () => {
      const plain = await startServing(COMPACT);
      const want = await outputs(plain).finally(() => plain.server.stop());
      const spec = await startServing([...COMPACT, ...NGRAM]);
      try {
        const got = await outputs(spec);
        expect(got.texts).toEqual(want.texts);
        expect(got.topLogprobs.map((top) => Object.keys(top).sort())).toEqual(want.topLogprobs.map((top) => Object.keys(top).sort()));
        got.topLogprobs.forEach((top, i) => {
          for (const [token, logprob] of Object.entries(top)) expect(Math.abs(logprob - want.topLogprobs[i][token])).toBeLessThan(1e-5);
        });
        // Constrained sequences drafted, and some of their drafts were kept.
        const metrics = await (await fetch(`${spec.server.baseUrl}/metrics`)).text();
        const counter = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
        expect(counter('vllm:spec_decode_num_drafts_total')).toBeGreaterThan(0);
        expect(counter('vllm:spec_decode_num_accepted_tokens_total')).toBeGreaterThan(0);
      } finally {
        await spec.server.stop();
      }
    },
    2 * SERVER_START_TIMEOUT_MS,
  );
});
