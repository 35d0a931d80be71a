/** @jest-environment ./test/helpers/ort-environment.js */
// A seeded random draft model with stories260K's vocabulary drafting for stories260K: its drafts
// are mostly wrong, and the output is still the target's, with sampling, n > 1 and the target's
// KV cache too small for the batch (preemption).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInProcessEngine } from '../../../../src/engine';
import type { EngineClient, IterationStats } from '../../../../src/engine/types';
import type { LoadedModel } from '../../../../src/model/types';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { needs } from '../../../helpers/needs';
import { captureDraftProposers, draftConfig, sumSpec, writeRandomDraft } from './spec-fixtures';

const onStories = needs(STORIES);

onStories.describe('a random draft model for stories260K', () => {
  let dir: string;
  let model: LoadedModel;
  let plain: EngineClient;
  let spec: EngineClient;
  /** Room for about two sequences of max_model_len in the target's cache: a batch of ten preempts. */
  let tight: EngineClient;
  const iterations: IterationStats[] = [];
  const tightIterations: IterationStats[] = [];
  const proposers = captureDraftProposers();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-draft-'));
    const draft = await writeRandomDraft(join(dir, 'draft.gguf'));
    model = await loadStories();
    plain = await createInProcessEngine(model, engineOptions());
    spec = await createInProcessEngine(model, engineOptions({ speculative: draftConfig(draft, 3) }));
    spec.onIteration((s) => iterations.push(s));
    tight = await createInProcessEngine(model, engineOptions({ speculative: draftConfig(draft, 3), numBlocksOverride: 34 }));
    tight.onIteration((s) => tightIterations.push(s));
  });
  afterAll(async () => {
    await plain?.shutdown();
    await spec?.shutdown();
    await tight?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps greedy output identical while most drafts are rejected', async () => {
    const ps = prompts(model, 8);
    const want = await Promise.all(ps.map((p) => finalOutput(plain, request(p, { max_tokens: 40 }))));
    iterations.length = 0;
    const got = await Promise.all(ps.map((p) => finalOutput(spec, request(p, { max_tokens: 40 }))));
    expect(got.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
    const stats = sumSpec(iterations);
    expect(stats.numDrafts).toBeGreaterThan(50);
    expect(stats.numAcceptedTokens / stats.numDraftTokens).toBeLessThan(0.3);
    expect(proposers[0].pool.numUsed).toBe(0);
  });

  it('samples with temperature > 0 and n > 1', async () => {
    const [p] = prompts(model, 1);
    iterations.length = 0;
    const out = await finalOutput(spec, request(p, { max_tokens: 30, temperature: 0.9, n: 3, seed: 7 }));
    expect(out.outputs).toHaveLength(3);
    for (const o of out.outputs) {
      expect(o.finishReason).toBe('length');
      expect(o.tokenIds).toHaveLength(30);
    }
    expect(sumSpec(iterations).numDrafts).toBeGreaterThan(0);
    expect(spec.stats().kvCacheUsage).toBe(0);
    expect(proposers[0].pool.numUsed).toBe(0);
  });

  it('keeps greedy output identical when the target preempts sequences', async () => {
    const ps = prompts(model, 10);
    const want = await Promise.all(ps.map((p) => finalOutput(plain, request(p, { max_tokens: 120 }))));
    const got = await Promise.all(ps.map((p) => finalOutput(tight, request(p, { max_tokens: 120 }))));
    expect(got.map((o) => o.outputs[0].tokenIds)).toEqual(want.map((o) => o.outputs[0].tokenIds));
    expect(tightIterations.reduce((n, it) => n + it.numPreemptions, 0)).toBeGreaterThan(0);
    expect(sumSpec(tightIterations).numDrafts).toBeGreaterThan(0);
    expect(proposers[1].pool.numUsed).toBe(0);
  });
});
