// Writes a small random WhisperForConditionalGeneration as a Hugging Face directory: config.json,
// model.safetensors with transformers' tensor names (listed here, from modeling_whisper's module
// tree, independently of the server's own list), preprocessor_config.json, generation_config.json
// and the built-in Whisper tokenizer (byte-level vocabulary plus Whisper's special tokens).

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { whisperTokenizerFiles } from '../../src/model/whisper/whisper-tokenizer-files';
import type { WeightTensor } from '../../src/model/types';
import { writeSafetensors, type SafetensorsDtype } from './write-hf-dir';

export interface TinyWhisperShape {
  dModel: number;
  encoderLayers: number;
  encoderHeads: number;
  encoderFfn: number;
  decoderLayers: number;
  decoderHeads: number;
  decoderFfn: number;
  numMelBins: number;
  /** Encoder positions (1500: a 30 s window of 3000 frames). */
  sourcePositions: number;
  targetPositions: number;
}

export const TINY_TEST_WHISPER: TinyWhisperShape = {
  dModel: 32,
  encoderLayers: 2,
  encoderHeads: 2,
  encoderFfn: 64,
  decoderLayers: 2,
  decoderHeads: 4,
  decoderFfn: 48,
  numMelBins: 80,
  sourcePositions: 1500,
  targetPositions: 64,
};

/** Seeded uniform(-a, a) values (xorshift32). */
export function seededValues(count: number, seed: number, a: number): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: count }, () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) / 4294967296) * 2 * a - a;
  });
}

/** transformers' sinusoids(length, channels): [sin | cos] halves, log-spaced timescales up to 10000. */
export function sinusoids(length: number, channels: number): Float32Array {
  const half = channels / 2;
  const increment = Math.log(10000) / (half - 1);
  const out = new Float32Array(length * channels);
  for (let t = 0; t < length; t++) {
    for (let i = 0; i < half; i++) {
      const angle = t * Math.exp(-increment * i);
      out[t * channels + i] = Math.sin(angle);
      out[t * channels + half + i] = Math.cos(angle);
    }
  }
  return out;
}

/** Every tensor of the model, HF names, [out, in] linears, [out, in, 3] convolutions. */
export function whisperTensors(s: TinyWhisperShape, vocabSize: number, seed: number): Array<{ name: string; tensor: WeightTensor }> {
  const out: Array<{ name: string; tensor: WeightTensor }> = [];
  let n = 0;
  const add = (name: string, shape: number[], data?: Float32Array) => {
    const count = shape.reduce((a, b) => a * b, 1);
    out.push({ name, tensor: { kind: 'f32', shape, data: data ?? seededValues(count, seed * 7919 + ++n, 0.15) } });
  };
  const d = s.dModel;
  const norm = (prefix: string) => {
    add(`${prefix}.weight`, [d], seededValues(d, seed + ++n, 0.2).map((v) => 1 + v));
    add(`${prefix}.bias`, [d], seededValues(d, seed + ++n, 0.1));
  };
  const attn = (prefix: string) => {
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
      add(`${prefix}.${proj}.weight`, [d, d]);
      if (proj !== 'k_proj') add(`${prefix}.${proj}.bias`, [d]);
    }
  };
  const mlp = (prefix: string, ffn: number) => {
    add(`${prefix}.fc1.weight`, [ffn, d]);
    add(`${prefix}.fc1.bias`, [ffn]);
    add(`${prefix}.fc2.weight`, [d, ffn]);
    add(`${prefix}.fc2.bias`, [d]);
  };
  add('model.encoder.conv1.weight', [d, s.numMelBins, 3]);
  add('model.encoder.conv1.bias', [d]);
  add('model.encoder.conv2.weight', [d, d, 3]);
  add('model.encoder.conv2.bias', [d]);
  add('model.encoder.embed_positions.weight', [s.sourcePositions, d], sinusoids(s.sourcePositions, d));
  for (let i = 0; i < s.encoderLayers; i++) {
    const p = `model.encoder.layers.${i}`;
    attn(`${p}.self_attn`);
    norm(`${p}.self_attn_layer_norm`);
    mlp(p, s.encoderFfn);
    norm(`${p}.final_layer_norm`);
  }
  norm('model.encoder.layer_norm');
  // Byte tokens' rows are large and the special tokens' small, so the tied head favours bytes and
  // greedy output is text (that differs with the audio), as a trained model's would be.
  const embed = seededValues(vocabSize * d, seed + ++n, 0.5);
  for (let i = 256 * d; i < embed.length; i++) embed[i] *= 0.1;
  add('model.decoder.embed_tokens.weight', [vocabSize, d], embed);
  add('model.decoder.embed_positions.weight', [s.targetPositions, d], seededValues(s.targetPositions * d, seed + ++n, 0.3));
  for (let i = 0; i < s.decoderLayers; i++) {
    const p = `model.decoder.layers.${i}`;
    attn(`${p}.self_attn`);
    norm(`${p}.self_attn_layer_norm`);
    attn(`${p}.encoder_attn`);
    norm(`${p}.encoder_attn_layer_norm`);
    mlp(p, s.decoderFfn);
    norm(`${p}.final_layer_norm`);
  }
  norm('model.decoder.layer_norm');
  return out;
}

export function writeWhisperDir(dir: string, shape: TinyWhisperShape = TINY_TEST_WHISPER, seed = 1, dtype: SafetensorsDtype = 'F32'): void {
  mkdirSync(dir, { recursive: true });
  const { tokenizerJson, tokenizerConfig, vocabSize } = whisperTokenizerFiles();
  const json = (name: string, value: unknown) => writeFileSync(join(dir, name), JSON.stringify(value, null, 2));
  json('config.json', {
    architectures: ['WhisperForConditionalGeneration'],
    model_type: 'whisper',
    d_model: shape.dModel,
    encoder_layers: shape.encoderLayers,
    encoder_attention_heads: shape.encoderHeads,
    encoder_ffn_dim: shape.encoderFfn,
    decoder_layers: shape.decoderLayers,
    decoder_attention_heads: shape.decoderHeads,
    decoder_ffn_dim: shape.decoderFfn,
    num_mel_bins: shape.numMelBins,
    max_source_positions: shape.sourcePositions,
    max_target_positions: shape.targetPositions,
    vocab_size: vocabSize,
    activation_function: 'gelu',
    scale_embedding: false,
    tie_word_embeddings: true,
    decoder_start_token_id: 257,
    eos_token_id: 256,
    pad_token_id: 256,
    bos_token_id: 256,
    torch_dtype: 'float32',
  });
  json('preprocessor_config.json', {
    feature_extractor_type: 'WhisperFeatureExtractor',
    feature_size: shape.numMelBins,
    sampling_rate: 16000,
    hop_length: 160,
    n_fft: 400,
    chunk_length: 30,
    n_samples: 480000,
    nb_max_frames: 3000,
    padding_side: 'right',
    padding_value: 0.0,
    return_attention_mask: false,
  });
  json('generation_config.json', { decoder_start_token_id: 257, eos_token_id: 256, pad_token_id: 256, max_length: shape.targetPositions });
  json('tokenizer.json', tokenizerJson);
  json('tokenizer_config.json', tokenizerConfig);
  writeSafetensors(join(dir, 'model.safetensors'), whisperTensors(shape, vocabSize, seed), dtype);
}
