/** @jest-environment ./test/helpers/ort-environment.js */
// Prompt-lookup speculation on the real runner (stories260K): greedy output is the same with and
// without it, drafts are really proposed and accepted, and the KV cache ends empty.

import { createInProcessEngine } from '../../../../src/engine';
import type { EngineClient, IterationStats } from '../../../../src/engine/types';
import type { LoadedModel } from '../../../../src/model/types';
import { normalizeSpeculativeConfig } from '../../../../src/engine/speculative/speculative-config';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { needs } from '../../../helpers/needs';
import { sumSpec } from './spec-fixtures';

const onStories = needs(STORIES);

onStories.describe('n-gram speculation on stories260K', () => {
  let model: LoadedModel;
  let plain: EngineClient;
  let spec: EngineClient;
  const iterations: IterationStats[] = [];

  beforeAll(async () => {
    model = await loadStories();
    plain = await createInProcessEngine(model, engineOptions());
    spec = await createInProcessEngine(
      model,
      engineOptions({ speculative: normalizeSpeculativeConfig({ method: 'ngram', num_speculative_tokens: 4, prompt_lookup_max: 3, prompt_lookup_min: 1 }) }),
    );
    spec.onIteration((s) => iterations.push(s));
  });
  afterAll(async () => {
    await plain?.shutdown();
    await spec?.shutdown();
  });

  it('greedy output is identical with and without speculation, alone and batched', async () => {
    const ps = prompts(model, 12);
    const want = await Promise.all(ps.map((p) => finalOutput(plain, request(p, { max_tokens: 60 }))));
    iterations.length = 0;
    const alone: number[][] = [];
    for (const p of ps.slice(0, 4)) alone.push((await finalOutput(spec, request(p, { max_tokens: 60 }))).outputs[0].tokenIds);
    expect(alone).toEqual(want.slice(0, 4).map((o) => o.outputs[0].tokenIds));
    const batched = await Promise.all(ps.map((p) => finalOutput(spec, request(p, { max_tokens: 60 }))));
    expect(batched.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
    const stats = sumSpec(iterations);
    expect(stats.numDrafts).toBeGreaterThan(0);
    expect(stats.numAcceptedTokens).toBeGreaterThan(0);
    expect(stats.numAcceptedTokens).toBeLessThan(stats.numDraftTokens);
    expect(spec.stats().kvCacheUsage).toBe(0);
  });
});
