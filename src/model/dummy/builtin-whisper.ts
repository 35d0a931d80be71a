// `--model builtin:whisper-tiny`: a whisper-tiny-shaped model (4+4 layers, d_model 384, 6 heads,
// 80 mel bins) with seeded random weights and the built-in byte-level tokenizer plus Whisper's
// special tokens, so the audio routes can be tried with no download. Its transcripts are noise.
import { WHISPER_FEATURES } from '../audio/feature-config';
import { createTokenizerFromHfFiles } from '../tokenizer';
import type { Tokenizer, WhisperArchConfig } from '../types';
import { WeightMap } from '../weight-map';
import { whisperArchConfig } from '../whisper/whisper-config';
import { whisperTokenizerFiles } from '../whisper/whisper-tokenizer-files';
import { whisperWeightSpecs } from '../whisper/whisper-weights';
import { randomWeights } from './random-weights';

export const WHISPER_TINY_SEED = 0;

/** whisper-tiny's config.json, with the built-in tokenizer's vocabulary size. */
export function whisperTinyConfig(): WhisperArchConfig {
  const json = {
    model_type: 'whisper',
    d_model: 384,
    encoder_layers: 4,
    encoder_attention_heads: 6,
    encoder_ffn_dim: 1536,
    decoder_layers: 4,
    decoder_attention_heads: 6,
    decoder_ffn_dim: 1536,
    num_mel_bins: 80,
    max_source_positions: 1500,
    max_target_positions: 448,
    vocab_size: whisperTokenizerFiles().vocabSize,
  };
  return whisperArchConfig(json, WHISPER_FEATURES, 'builtin:whisper-tiny');
}

export function whisperTinyWeights(config: WhisperArchConfig = whisperTinyConfig(), seed = WHISPER_TINY_SEED): WeightMap {
  const weights = new WeightMap();
  for (const { name, shape, values } of randomWeights(whisperWeightSpecs(config), seed)) weights.set(name, { kind: 'f32', shape, data: values() });
  return weights;
}

export function whisperTinyTokenizer(): Tokenizer {
  const { tokenizerJson, tokenizerConfig } = whisperTokenizerFiles();
  return createTokenizerFromHfFiles(tokenizerJson, tokenizerConfig);
}
