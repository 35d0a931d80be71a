// WhisperForConditionalGeneration's config.json (transformers' WhisperConfig) -> the engine's
// ModelArchConfig: the decoder's shape in the fields the KV cache and sampler read (layers, heads,
// head size, vocabulary, context = max_target_positions), the encoder's in `encoder`.

import type { AudioFeatureConfig } from '../audio/feature-config';
import type { ModelArchConfig, WhisperArchConfig } from '../types';

/** The encoder side of an encoder-decoder (Whisper) model. */
export interface WhisperEncoderConfig {
  numMelBins: number;
  numLayers: number;
  numHeads: number;
  ffnDim: number;
  /** Encoder output positions (max_source_positions, 1500): the input has twice as many frames. */
  numPositions: number;
  /** The decoder's feed-forward size (the decoder's other sizes are ModelArchConfig's). */
  decoderFfnDim: number;
  /** Token embeddings are multiplied by sqrt(d_model) (scale_embedding). */
  scaleEmbedding: boolean;
  layerNormEps: number;
  /** The feature extractor the encoder was trained with (preprocessor_config.json). */
  features: AudioFeatureConfig;
}

/** Whisper's LayerNorms use torch's default epsilon. */
const LAYER_NORM_EPS = 1e-5;

type Json = Record<string, unknown>;

export function whisperArchConfig(json: Json, features: AudioFeatureConfig, source: string): WhisperArchConfig {
  const num = (key: string, fallback?: number): number => {
    const value = json[key];
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
    if (value === undefined && fallback !== undefined) return fallback;
    throw new Error(`${source}: config.json ${key} must be a positive integer, got ${JSON.stringify(value)}`);
  };
  const activation = json.activation_function ?? 'gelu';
  if (activation !== 'gelu') throw new Error(`${source}: activation_function ${JSON.stringify(activation)} is not supported (Whisper uses gelu)`);
  const dModel = num('d_model');
  const decoderHeads = num('decoder_attention_heads');
  const encoderHeads = num('encoder_attention_heads');
  for (const [name, heads] of [['decoder_attention_heads', decoderHeads], ['encoder_attention_heads', encoderHeads]] as const) {
    if (dModel % heads !== 0) throw new Error(`${source}: d_model ${dModel} is not divisible by ${name} ${heads}`);
  }
  const numMelBins = num('num_mel_bins', 80);
  if (features.numMelBins !== numMelBins) throw new Error(`${source}: the feature extractor has ${features.numMelBins} mel bins, the model ${numMelBins}`);
  return {
    architecture: 'whisper',
    hiddenSize: dModel,
    numLayers: num('decoder_layers'),
    numHeads: decoderHeads,
    numKvHeads: decoderHeads,
    headDim: dModel / decoderHeads,
    vocabSize: num('vocab_size'),
    maxPositionEmbeddings: num('max_target_positions', 448),
    // proj_out is the token embedding unless a checkpoint says otherwise.
    tieWordEmbeddings: json.tie_word_embeddings !== false,
    encoder: {
      numMelBins,
      numLayers: num('encoder_layers'),
      numHeads: encoderHeads,
      ffnDim: num('encoder_ffn_dim'),
      numPositions: num('max_source_positions', 1500),
      decoderFfnDim: num('decoder_ffn_dim'),
      scaleEmbedding: json.scale_embedding === true,
      layerNormEps: LAYER_NORM_EPS,
      features,
    },
  };
}

/** The encoder part of an encoder-decoder config; throws for a decoder-only one. */
export function encoderOf(config: ModelArchConfig): WhisperEncoderConfig {
  if (!config.encoder) throw new Error(`architecture '${config.architecture}' has no encoder`);
  return config.encoder;
}
