// Shared by the speculative decoding tests: the speculative stats summed over iterations, and the
// draft proposers an engine builds (captured from the factory, to look at their KV pools).

import type { IterationStats, SpecDecodingStats } from '../../../../src/engine/types';
import { DRAFT_MODEL_PROPOSER, type DraftModelProposer } from '../../../../src/engine/speculative/draft-model-proposer';
import { normalizeSpeculativeConfig } from '../../../../src/engine/speculative/speculative-config';

export function sumSpec(iterations: readonly IterationStats[]): SpecDecodingStats {
  const sum: SpecDecodingStats = { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: [] };
  for (const it of iterations) {
    const s = it.specDecoding;
    if (!s) continue;
    sum.numDrafts += s.numDrafts;
    sum.numDraftTokens += s.numDraftTokens;
    sum.numAcceptedTokens += s.numAcceptedTokens;
    s.acceptedPerPosition.forEach((n, i) => (sum.acceptedPerPosition[i] = (sum.acceptedPerPosition[i] ?? 0) + n));
  }
  return sum;
}

export function draftConfig(model: string, k = 4) {
  return normalizeSpeculativeConfig({ method: 'draft_model', model, num_speculative_tokens: k });
}

/** Every draft proposer created from now on, in order. */
export function captureDraftProposers(): DraftModelProposer[] {
  const created: DraftModelProposer[] = [];
  const create = DRAFT_MODEL_PROPOSER.create.bind(DRAFT_MODEL_PROPOSER);
  jest.spyOn(DRAFT_MODEL_PROPOSER, 'create').mockImplementation(async (ctx) => {
    const proposer = (await create(ctx)) as DraftModelProposer;
    created.push(proposer);
    return proposer;
  });
  return created;
}
