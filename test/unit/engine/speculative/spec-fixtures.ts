// Shared by the speculative decoding tests: the speculative stats summed over iterations, and the
// draft proposers an engine builds (captured from the factory, to look at their KV pools).

import type { IterationStats, SpecDecodingStats } from '../../../../src/engine/types';
import { DRAFT_MODEL_PROPOSER, type DraftModelProposer } from '../../../../src/engine/speculative/draft-model-proposer';
import { normalizeSpeculativeConfig } from '../../../../src/engine/speculative/speculative-config';
import { randomDecoderWeights } from '../../../../src/model/dummy/random-weights';
import { readGgufFile } from '../../../../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf } from '../../../../src/model/gguf/write-model';
import { gv } from '../../../../src/model/gguf/writer';
import type { DecoderArchConfig } from '../../../../src/model/types';
import { STORIES } from '../engine-fixtures';

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

/** A seeded random llama with stories260K's vocabulary (`tokens` edits its pieces), as a GGUF file. */
export async function writeRandomDraft(path: string, overrides: Partial<DecoderArchConfig> = {}, tokens?: (pieces: string[]) => string[]): Promise<string> {
  const config: DecoderArchConfig = {
    architecture: 'llama', hiddenSize: 32, intermediateSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 8,
    vocabSize: 512, rmsNormEps: 1e-5, ropeTheta: 10000, ropeScaling: null, maxPositionEmbeddings: 512,
    tieWordEmbeddings: true, attentionBias: false, ...overrides,
  };
  const tokenizer = ggufTokenizerMetadata(await readGgufFile(STORIES));
  // A smaller vocabulary keeps the first pieces.
  for (const key of ['tokenizer.ggml.tokens', 'tokenizer.ggml.scores', 'tokenizer.ggml.token_type']) {
    const entry = tokenizer[key];
    if (entry) tokenizer[key] = { ...entry, value: (entry.value as unknown[]).slice(0, config.vocabSize) } as typeof entry;
  }
  if (tokens) {
    const pieces = tokenizer['tokenizer.ggml.tokens'].value as string[];
    tokenizer['tokenizer.ggml.tokens'] = gv.strings(tokens([...pieces]));
  }
  writeModelGguf(path, config, randomDecoderWeights(config, 11), tokenizer, 'f32');
  return path;
}
