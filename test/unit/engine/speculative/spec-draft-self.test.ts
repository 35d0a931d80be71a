/** @jest-environment ./test/helpers/ort-environment.js */
// stories260K drafting for itself: the draft model agrees with the target almost always, greedy
// output is the same as without speculation, and the draft's KV pool ends empty.

import { createInProcessEngine } from '../../../../src/engine';
import type { EngineClient, IterationStats } from '../../../../src/engine/types';
import type { LoadedModel } from '../../../../src/model/types';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { sharedModel } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { captureDraftProposers, draftConfig, sumSpec } from './spec-fixtures';

const STORIES_Q4 = sharedModel('stories260K-Q4_0.gguf');
const onStories = needs(STORIES, STORIES_Q4);

onStories.describe('stories260K as its own draft model', () => {
  let model: LoadedModel;
  let plain: EngineClient;
  let spec: EngineClient;
  const iterations: IterationStats[] = [];
  const proposers = captureDraftProposers();

  beforeAll(async () => {
    model = await loadStories();
    plain = await createInProcessEngine(model, engineOptions());
    spec = await createInProcessEngine(model, engineOptions({ speculative: draftConfig(STORIES, 4) }));
    spec.onIteration((s) => iterations.push(s));
  });
  afterAll(async () => {
    await plain?.shutdown();
    await spec?.shutdown();
  });

  it('greedy output is identical, alone and batched, with nearly every draft accepted', async () => {
    const ps = prompts(model, 10);
    const want = await Promise.all(ps.map((p) => finalOutput(plain, request(p, { max_tokens: 50 }))));
    iterations.length = 0;
    const alone = await finalOutput(spec, request(ps[0], { max_tokens: 50 }));
    expect(alone.outputs[0].tokenIds).toEqual(want[0].outputs[0].tokenIds);
    const batched = await Promise.all(ps.map((p) => finalOutput(spec, request(p, { max_tokens: 50 }))));
    expect(batched.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
    const stats = sumSpec(iterations);
    expect(stats.numDrafts).toBeGreaterThan(20);
    expect(stats.numAcceptedTokens / stats.numDraftTokens).toBeGreaterThan(0.95);
    expect(stats.acceptedPerPosition).toHaveLength(4);
    expect(spec.stats().kvCacheUsage).toBe(0);
  });

  it('keeps greedy output identical with its Q4_0 copy drafting, which agrees only in part', async () => {
    const q4 = await createInProcessEngine(model, engineOptions({ speculative: draftConfig(STORIES_Q4, 5) }));
    const seen: IterationStats[] = [];
    q4.onIteration((s) => seen.push(s));
    try {
      const ps = prompts(model, 10);
      const want = await Promise.all(ps.map((p) => finalOutput(plain, request(p, { max_tokens: 60 }))));
      const got = await Promise.all(ps.map((p) => finalOutput(q4, request(p, { max_tokens: 60 }))));
      expect(got.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
      const stats = sumSpec(seen);
      expect(stats.numAcceptedTokens).toBeGreaterThan(0);
      expect(stats.numAcceptedTokens).toBeLessThan(stats.numDraftTokens);
      expect(proposers[1].pool.numUsed).toBe(0);
    } finally {
      await q4.shutdown();
    }
  });

  it('gives every draft block back when the sequences finish', () => {
    expect(proposers.length).toBeGreaterThan(0);
    expect(proposers[0].pool.numUsed).toBe(0);
    expect(proposers[0].pool.numBlocks).toBeGreaterThan(0);
  });
});
