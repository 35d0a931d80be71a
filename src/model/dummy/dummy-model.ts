// The built-in model for `--load-format dummy` or no MODEL: llama-shaped, seeded random weights
// (same seed -> same weights), the built-in byte-level tokenizer and ChatML template. Output is noise.
import { BUILTIN_SPECIAL_TOKENS } from '../tokenizer';
import type { ModelArchConfig } from '../types';
import { WeightMap } from '../weight-map';
import { randomDecoderWeights } from './random-weights';

/** Byte tokens plus the built-in special tokens. */
const BUILTIN_VOCAB_SIZE = 256 + BUILTIN_SPECIAL_TOKENS.length;

const DUMMY_SEED = 0;

export const DUMMY_CONFIG: ModelArchConfig = {
  architecture: 'llama',
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

export function dummyWeights(config: ModelArchConfig = DUMMY_CONFIG, seed = DUMMY_SEED): WeightMap {
  const weights = new WeightMap();
  for (const { name, shape, values } of randomDecoderWeights(config, seed)) {
    weights.set(name, { kind: 'f32', shape, data: values() });
  }
  return weights;
}
