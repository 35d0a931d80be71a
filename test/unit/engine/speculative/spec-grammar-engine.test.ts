/** @jest-environment ./test/helpers/ort-environment.js */
// Structured outputs under prompt-lookup speculation on the real runner (stories260K) and the real
// grammar worker: constrained greedy output is the same with and without speculation (JSON
// schema, regex, choice, EBNF, alone and batched with unconstrained requests), drafts are proposed
// and accepted for constrained sequences, and sampled constrained outputs stay valid.

import Ajv from 'ajv';
import type { EngineClient, IterationStats, SamplingParams, StructuredOutputsParams } from '../../../../src/engine/types';
import type { LoadedModel } from '../../../../src/model/types';
import { finalOutput, loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { needs } from '../../../helpers/needs';
import { KID_REGEX, KID_SCHEMA, LOOKUP_TEXT } from '../../../helpers/constrained-outputs';
import { ngramEnginePair, sumSpecStats } from './spec-core';

const onStories = needs(STORIES);
const K = 4;

/** Constraints whose outputs repeat what the prompt and they themselves wrote, as prompt lookup needs. */
const CONSTRAINTS: Array<[string, StructuredOutputsParams, (text: string) => boolean]> = [
  ['JSON schema', { json: KID_SCHEMA, disable_any_whitespace: true }, (t) => new Ajv().compile(KID_SCHEMA)(JSON.parse(t))],
  ['regex', { regex: KID_REGEX }, (t) => new RegExp(`^${KID_REGEX}$`).test(t)],
  ['choice', { choice: ['Once upon a time there was a little girl', 'Once upon a time there was a dog'] }, (t) => t.startsWith('Once upon a time there was a ')],
  ['EBNF', { grammar: 'root ::= item ", " item ", " item "."\nitem ::= "Lily" | "the park" | "her dog"' }, (t) => /^(Lily|the park|her dog)(, (Lily|the park|her dog)){2}\.$/.test(t)],
];

onStories.describe('structured outputs under n-gram speculation (stories260K)', () => {
  let model: LoadedModel;
  let plain: EngineClient;
  let spec: EngineClient;
  let iterations: IterationStats[];

  beforeAll(async () => {
    model = await loadStories();
    ({ plain, spec, iterations } = await ngramEnginePair(model, K));
  });
  afterAll(async () => {
    await plain?.shutdown();
    await spec?.shutdown();
  });

  /** Prompts that spell some of what the constrained outputs write, so that prompt lookup finds drafts. */
  const lookupPrompts = () => {
    const example = `${LOOKUP_TEXT} Lily, the park, her dog.`;
    return prompts(model, 4).map((p) => [...p, ...model.tokenizer!.encode(example, { addSpecialTokens: false })]);
  };

  it.each(CONSTRAINTS)('%s: greedy output identical with and without speculation, alone (drafts accepted) and batched', async (_name, so, valid) => {
    const params: Partial<SamplingParams> = { structured_outputs: so, max_tokens: 100, ignore_eos: false };
    const ps = lookupPrompts();
    const want = await Promise.all(ps.map((p) => finalOutput(plain, request(p, params))));
    iterations.length = 0;
    const alone = await finalOutput(spec, request(ps[0], params));
    expect(alone.outputs[0].tokenIds).toEqual(want[0].outputs[0].tokenIds);
    const stats = sumSpecStats(iterations, K);
    expect(stats.numDrafts).toBeGreaterThan(0);
    expect(stats.numAcceptedTokens).toBeGreaterThan(0);
    // Batched with unconstrained requests that draft too.
    const free = ps.map((p) => request(p, { max_tokens: 32 }));
    const freeWant = await Promise.all(free.map((r) => finalOutput(plain, { ...r, requestId: `${r.requestId}-plain` })));
    const [constrained, unconstrained] = await Promise.all([
      Promise.all(ps.map((p) => finalOutput(spec, request(p, params)))),
      Promise.all(free.map((r) => finalOutput(spec, r))),
    ]);
    expect(constrained.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
    expect(unconstrained.map((o) => o.outputs[0].tokenIds)).toEqual(freeWant.map((o) => o.outputs[0].tokenIds));
    for (const o of constrained) if (o.outputs[0].finishReason === 'stop') expect(valid(o.outputs[0].text)).toBe(true);
    expect(constrained.every((o) => o.outputs[0].finishReason === 'stop')).toBe(true);
    expect(spec.stats().kvCacheUsage).toBe(0);
  });

  it('temperature 0.8: every constrained output is valid (n = 1 and n = 3, a matcher per completion), with drafts accepted', async () => {
    const validate = new Ajv().compile(KID_SCHEMA);
    iterations.length = 0;
    const outs = await Promise.all(
      lookupPrompts().flatMap((p, i) =>
        [1, 3].map((n) => finalOutput(spec, request(p, { structured_outputs: CONSTRAINTS[0][1], temperature: 0.8, seed: n + 10 * i, n, max_tokens: 120, ignore_eos: false }))),
      ),
    );
    const completions = outs.flatMap((o) => o.outputs);
    expect(completions).toHaveLength(16);
    for (const c of completions) {
      expect(c.finishReason).toBe('stop');
      expect(validate(JSON.parse(c.text))).toBe(true);
    }
    expect(sumSpecStats(iterations, K).numAcceptedTokens).toBeGreaterThan(0);
  });
});
