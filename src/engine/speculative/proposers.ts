// The proposer registry: one factory per --speculative-config method.

import { DRAFT_MODEL_PROPOSER } from './draft-model-proposer';
import { NGRAM_PROPOSER } from './ngram-proposer';
import type { DraftProposer, ProposerContext, ProposerFactory } from './proposer';

export const PROPOSERS: readonly ProposerFactory[] = [NGRAM_PROPOSER, DRAFT_MODEL_PROPOSER];

export function createProposer(ctx: ProposerContext, factories: readonly ProposerFactory[] = PROPOSERS): Promise<DraftProposer> {
  const factory = factories.find((f) => f.method === ctx.config.method);
  if (!factory) return Promise.reject(new Error(`--speculative-config: method "${ctx.config.method}" is not available`));
  return factory.create(ctx);
}
