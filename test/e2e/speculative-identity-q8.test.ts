// Speculation keeps greedy output on stories260K-Q8_0 too (the server logs which decoder backend
// runs it): token ids, text, reasons and logprobs with and without prompt lookup, whole and
// streamed, alone and batched.

import { needs } from '../helpers/needs';
import { sharedModel } from '../helpers/model-files';
import { SERVER_START_TIMEOUT_MS } from '../helpers/server';
import { counter, expectSameOutput, startPair, type Pair } from './speculative-pair';

const Q8 = sharedModel('stories260K-Q8_0.gguf');
const PROMPTS = ['Once upon a time', 'Lily and Ben went to the park. Lily and Ben went to the park. Lily and Ben', 'The cat sat on the mat. The dog'];

needs(Q8).describe('speculative decoding keeps greedy output identical (stories260K-Q8_0)', () => {
  let pair: Pair;
  beforeAll(async () => {
    pair = await startPair(Q8, []);
  }, 2 * SERVER_START_TIMEOUT_MS);
  afterAll(() => pair?.stop());

  it('completions alone and batched, with logprobs and stop strings', async () => {
    const bodies = PROMPTS.flatMap((prompt) => [
      { prompt, max_tokens: 60, logprobs: 3 },
      { prompt, max_tokens: 7 },
      { prompt, max_tokens: 60, stop: [' the'], logprobs: 1 },
    ]);
    const run = (side: Pair['spec'], body: object) => side.client.completions.create({ model: 'stories', temperature: 0, return_token_ids: true, ...body } as never);
    for (const body of bodies) expectSameOutput(await run(pair.spec, body), await run(pair.plain, body));
    const [spec, plain] = [await Promise.all(bodies.map((b) => run(pair.spec, b))), await Promise.all(bodies.map((b) => run(pair.plain, b)))];
    expect(expectSameOutput(spec, plain)).toBeGreaterThan(500);
    expect(counter(await pair.spec.metrics(), 'vllm:spec_decode_num_accepted_tokens_total')).toBeGreaterThan(0);
  });

  it('chat streamed, with top_logprobs', async () => {
    const request = { model: 'stories', temperature: 0, messages: [{ role: 'user' as const, content: PROMPTS[1] }], max_tokens: 50, logprobs: true, top_logprobs: 2 };
    expectSameOutput(await pair.spec.client.chat.completions.create(request), await pair.plain.client.chat.completions.create(request));
    const text = async (side: Pair['spec']) => {
      let out = '';
      for await (const chunk of await side.client.chat.completions.create({ ...request, stream: true })) out += chunk.choices[0]?.delta?.content ?? '';
      return out;
    };
    expect(await text(pair.spec)).toBe(await text(pair.plain));
  });

  it('the log names the backend both servers run', () => {
    const backend = (side: Pair['spec']) => /decoder backend: ([\w-]+)/.exec(side.server.output())?.[1];
    expect(backend(pair.spec)).toBe(backend(pair.plain));
    console.log(`stories260K-Q8_0 runs on ${backend(pair.spec)}`);
  });
});
