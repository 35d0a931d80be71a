/** @jest-environment ./test/helpers/ort-environment.js */
// A target sequence with a LoRA adapter is drafted for by the base draft model (as vLLM): the
// drafts follow the base model, so fewer are accepted, and the output is still the adapter's.

import { createInProcessEngine } from '../../../../src/engine';
import type { EngineClient, IterationStats, LoraEngineOptions, LoraRequest } from '../../../../src/engine/types';
import type { DecoderArchConfig, LoadedModel } from '../../../../src/model/types';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { writeTestAdapter } from '../../../helpers/lora-engine-fixtures';
import { tempDirPerSuite } from '../../../helpers/lora-files';
import { needs } from '../../../helpers/needs';
import { draftConfig, sumSpec } from './spec-fixtures';

const LORA: LoraEngineOptions = { maxLoras: 2, maxRank: 16, maxCpuLoras: 2, dtype: 'auto' };

needs(STORIES).describe('draft model speculation with LoRA adapters', () => {
  const dir = tempDirPerSuite('draft-lora-');
  let model: LoadedModel;
  let adapter: LoraRequest;
  let plain: EngineClient;
  let spec: EngineClient;
  const iterations: IterationStats[] = [];

  beforeAll(async () => {
    model = await loadStories();
    adapter = writeTestAdapter(dir(), model.config as DecoderArchConfig, 1);
    plain = await createInProcessEngine(model, engineOptions({ lora: LORA }));
    spec = await createInProcessEngine(model, engineOptions({ lora: LORA, speculative: draftConfig(STORIES, 4) }));
    spec.onIteration((s) => iterations.push(s));
  });
  afterAll(async () => {
    await plain?.shutdown();
    await spec?.shutdown();
  });

  it("keeps each request's greedy output, with and without its adapter, in one batch", async () => {
    const ps = prompts(model, 6);
    const extras = ps.map((_, i) => (i % 2 ? { lora: adapter } : {}));
    const want = await Promise.all(ps.map((p, i) => finalOutput(plain, request(p, { max_tokens: 40 }, extras[i]))));
    const got = await Promise.all(ps.map((p, i) => finalOutput(spec, request(p, { max_tokens: 40 }, extras[i]))));
    expect(got.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
    // The adapter changes the output: the base drafts are then not all accepted.
    const base = await finalOutput(plain, request(ps[1], { max_tokens: 40 }));
    expect(base.outputs[0].tokenIds).not.toEqual(want[1].outputs[0].tokenIds);
    const stats = sumSpec(iterations);
    expect(stats.numAcceptedTokens).toBeGreaterThan(0);
    expect(stats.numAcceptedTokens).toBeLessThan(stats.numDraftTokens);
  });
});
