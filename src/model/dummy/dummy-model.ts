// The built-in model for `--load-format dummy` or no MODEL: llama-shaped, seeded random weights
// (same seed -> same weights), the built-in byte-level tokenizer and ChatML template. Output is noise.
import { llama } from '../architectures/llama';
import { BUILTIN_SPECIAL_TOKENS } from '../tokenizer';
import type { DecoderArchConfig, ModelOutput } from '../types';
import { WeightMap } from '../weight-map';
import { randomWeights } from './random-weights';

/** Byte tokens plus the built-in special tokens. */
const BUILTIN_VOCAB_SIZE = 256 + BUILTIN_SPECIAL_TOKENS.length;

const DUMMY_SEED = 0;

export const DUMMY_CONFIG: DecoderArchConfig = {
  architecture: llama.name,
  hiddenSize: 256,
  intermediateSize: 768,
  numLayers: 4,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 64,
  vocabSize: BUILTIN_VOCAB_SIZE,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  ropeScaling: null,
  maxPositionEmbeddings: 4096,
  tieWordEmbeddings: false,
  attentionBias: false,
};

/** The weights `output`'s graph reads (the LM head only when generating). */
export function dummyWeights(config: DecoderArchConfig = DUMMY_CONFIG, seed = DUMMY_SEED, output: ModelOutput = { kind: 'logits' }): WeightMap {
  const weights = new WeightMap();
  for (const { name, shape, values } of randomWeights(llama.weightSpecs(config, output), seed)) {
    weights.set(name, { kind: 'f32', shape, data: values() });
  }
  return weights;
}
