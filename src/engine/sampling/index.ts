// Sampling for the engine core (plain TypeScript).
//
// How the core uses it:
//   - once per engine:  const ws = new SamplingWorkspace(vocabSize);
//   - per sequence, when it enters the engine (n > 1: one per child):
//       const badWords = params.bad_words.length ? encodeBadWords(params.bad_words, tokenizer) : undefined;
//         (do this once per request at add time: it throws RequestValidationError → 400)
//       const sampler = new SequenceSampler({ params, promptTokenIds, vocabSize, eosTokenIds,
//                                             badWordsTokenIds: badWords, seed: childSeed(params.seed, index),
//                                             constraint });   // structured outputs: a SequenceConstraint
//     The sampler applies the logits processors of the registry (logits-processor.ts); a constraint's
//     prepare() (its grammar bitmask) must have run before each sample().
//   - each decode step, for each sequence i of the batch (synchronously, one after another):
//       const { tokenId, logprobs } = sampler.sample(step.logits, i * vocabSize, ws);
//     `logprobs` (PositionLogprobs | null) goes into CompletionOutput.logprobs; sampler.cumulativeLogprob
//     into CompletionOutput.cumulativeLogprob. The sampler records the token itself (penalties,
//     bad words and min_tokens need the history); then pass tokenId to the sequence's
//     SequenceOutputProcessor (../detokenizer) for stop / length / text.
//   - prompt logprobs (params.prompt_logprobs != null): for each prefill chunk run with allLogits,
//       promptLogprobsForRows(allLogits[i], vocabSize, promptTokenIds, chunkStartPosition, chunkLen,
//                             { numTop: params.prompt_logprobs, tokenIds: null })
//     and append; the final list starts with null for position 0.
// Same seed → same tokens whatever else is in the batch: each sampler owns its generator.

export { SamplingWorkspace } from './workspace';
export { SequenceSampler, type SequenceSamplerInit } from './sequence-sampler';
export { Rng, seedGlobalSampler, childSeed } from './rng';
export { encodeBadWords } from './bad-words';
export { detectRepetition } from './repetition';
export {
  logSumExp,
  topKIndices,
  positionLogprobs,
  promptLogprobsForRows,
} from './logprobs';
export { selectThresholdIndex } from './threshold-select';
export { computeSamplingWeights } from './filters';
export { LOGITS_PROCESSORS } from './builtin-processors';
export {
  createLogitsProcessors,
  type LogitsProcessor,
  type LogitsProcessorContext,
  type LogitsProcessorFactory,
  type SequenceConstraint,
} from './logits-processor';
