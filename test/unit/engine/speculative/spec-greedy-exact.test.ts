/** @jest-environment ./test/helpers/ort-environment.js */
// Greedy output with prompt lookup is the output without it to the last bit: token ids, text,
// finish and stop reasons, logprobs, cumulative logprob and prompt logprobs, with the processors
// and stop rules that act on kept drafts, alone and three at a time (in-process engines on
// stories260K; one thread, so three sequences never make the attention kernel split a batch as
// a wide one, and both engines compute each position with the same kernels).

import { createInProcessEngine } from '../../../../src/engine';
import type { EngineClient, IterationStats, RequestOutput, SamplingParams } from '../../../../src/engine/types';
import type { LoadedModel } from '../../../../src/model/types';
import { normalizeSpeculativeConfig } from '../../../../src/engine/speculative/speculative-config';
import { engineOptions, finalOutput, loadStories, request, STORIES } from '../engine-fixtures';
import { needs } from '../../../helpers/needs';

const REPETITIVE = 'Lily and Ben went to the park. Lily and Ben went to the park. Lily and Ben';

needs(STORIES).describe('greedy output with prompt lookup is bit-identical (stories260K, in-process)', () => {
  let model: LoadedModel;
  let plain: EngineClient;
  let spec: EngineClient;
  let drafted = 0;

  beforeAll(async () => {
    model = await loadStories();
    plain = await createInProcessEngine(model, engineOptions());
    spec = await createInProcessEngine(model, engineOptions({ speculative: normalizeSpeculativeConfig({ method: 'ngram', num_speculative_tokens: 4, prompt_lookup_max: 3, prompt_lookup_min: 1 }) }));
    spec.onIteration((s: IterationStats) => (drafted += s.specDecoding?.numDraftTokens ?? 0));
  });
  afterAll(async () => {
    await plain?.shutdown();
    await spec?.shutdown();
  });

  const prompt = () => model.tokenizer!.encode(REPETITIVE, { addSpecialTokens: true });
  /** What a client sees of a finished request (ids differ between engines). */
  const visible = (o: RequestOutput) => ({ promptLogprobs: o.promptLogprobs, outputs: o.outputs });

  const CASES: [string, Partial<SamplingParams>][] = [
    ['logprobs and prompt logprobs', { max_tokens: 40, logprobs: 3, prompt_logprobs: 2 }],
    // Its output repeats tokens 7..11 at 13..17: drafts from token 13 on, cut by max_tokens.
    ['max_tokens inside a draft', { max_tokens: 15, logprobs: 1 }],
    ['a stop string', { max_tokens: 40, stop: ['park. L'], logprobs: 1 }],
    ['a stop string kept in the output', { max_tokens: 40, stop: ['went'], include_stop_str_in_output: true }],
    ['penalties', { max_tokens: 40, repetition_penalty: 1.3, frequency_penalty: 0.4, presence_penalty: 0.3, logprobs: 2 }],
    ['min_tokens with EOS', { max_tokens: 60, min_tokens: 50, ignore_eos: false }],
    ['bad_words', { max_tokens: 40, bad_words: ['park'] }],
    ['top_k 1 at temperature 1 (verify\'s random path)', { max_tokens: 40, temperature: 1, top_k: 1, seed: 3, logprobs: 1 }],
  ];

  it.each(CASES)('%s', async (_, params) => {
    const before = drafted;
    const want = visible(await finalOutput(plain, request(prompt(), params)));
    expect(visible(await finalOutput(spec, request(prompt(), params)))).toEqual(want);
    expect(drafted).toBeGreaterThan(before);
  });

  it('three requests at once', async () => {
    const batch = (engine: EngineClient) => Promise.all(CASES.slice(0, 3).map(([, params]) => finalOutput(engine, request(prompt(), params))));
    expect((await batch(spec)).map(visible)).toEqual((await batch(plain)).map(visible));
  });

  it('a stop token id inside the drafts', async () => {
    const free = await finalOutput(plain, request(prompt(), { max_tokens: 30 }));
    const stopId = free.outputs[0].tokenIds[12];
    const params = { max_tokens: 30, stop_token_ids: [stopId], logprobs: 1 };
    const want = visible(await finalOutput(plain, request(prompt(), params)));
    expect(want.outputs[0].stopReason).toBe(stopId);
    expect(visible(await finalOutput(spec, request(prompt(), params)))).toEqual(want);
  });
});
