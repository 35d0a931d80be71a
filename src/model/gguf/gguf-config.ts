// DecoderArchConfig from GGUF metadata (keys as written by llama.cpp's gguf-py, prefixed by the architecture).
import type { DecoderArchConfig } from '../types';
import type { GgufFile, GgufMetadata } from './gguf-file';
import { moeGgufFields } from '../moe/moe-gguf';
import { ropeScalingFromFreqFactors } from './rope-freqs';

/** `ropeFreqFactors`: the rope_freqs tensor llama.cpp stores for Llama-3.1-style scaling, when present. */
export function ggufArchConfig(file: GgufFile, ropeFreqFactors: Float32Array | null): DecoderArchConfig {
  const { metadata, path } = file;
  const architecture = String(metadata['general.architecture']);
  const num = (key: string, fallback?: number): number => {
    const value = metadata[`${architecture}.${key}`];
    if (typeof value === 'number' || typeof value === 'bigint') return Number(value);
    if (fallback !== undefined) return fallback;
    throw new Error(`${path}: GGUF metadata lacks ${architecture}.${key}`);
  };

  const hiddenSize = num('embedding_length');
  const numHeads = num('attention.head_count');
  const headDim = num('attention.key_length', hiddenSize / numHeads);
  // rope.dimension_count below the head size: partial rotary (phi3's partial_rotary_factor).
  const ropeDims = num('rope.dimension_count', headDim);
  if (ropeDims > headDim || ropeDims % 2 || ropeDims <= 0) {
    throw new Error(`${path}: rope.dimension_count ${ropeDims} does not fit head size ${headDim}`);
  }
  const ropeTheta = num('rope.freq_base', 10000);
  const tensorNames = new Set(file.tensors.map((t) => t.name));
  const embedding = file.tensors.find((t) => t.name === 'token_embd.weight');
  const tokens = metadata['tokenizer.ggml.tokens'];
  const vocabSize = embedding?.ggmlShape[1] ?? (Array.isArray(tokens) ? tokens.length : num('vocab_size'));

  const numLayers = num('block_count');
  const experts = num('expert_count', 0);
  // A file whose every layer is MoE (Mixtral) may carry no dense width: the experts' stands in.
  const feedForward = num('feed_forward_length', experts > 0 ? num('expert_feed_forward_length') : undefined);
  return {
    architecture,
    hiddenSize,
    intermediateSize: feedForward,
    numLayers,
    numHeads,
    numKvHeads: num('attention.head_count_kv', numHeads),
    headDim,
    vocabSize,
    rmsNormEps: num('attention.layer_norm_rms_epsilon'),
    ropeTheta,
    ropeScaling: ropeScaling(metadata, architecture, ropeFreqFactors, ropeTheta, headDim),
    maxPositionEmbeddings: num('context_length'),
    tieWordEmbeddings: !tensorNames.has('output.weight'),
    attentionBias: tensorNames.has('blk.0.attn_q.bias'),
    ...(ropeDims < headDim ? { rotaryDim: ropeDims } : {}),
    ...moeGgufFields(file, numLayers, feedForward, num),
  };
}

/** HF-style rope_scaling from GGUF keys; the rope_freqs tensor becomes explicit per-frequency divisors. */
function ropeScaling(
  metadata: GgufMetadata,
  arch: string,
  ropeFreqFactors: Float32Array | null,
  ropeTheta: number,
  headDim: number,
): Record<string, unknown> | null {
  if (ropeFreqFactors) {
    const scaling = ropeScalingFromFreqFactors(ropeFreqFactors, ropeTheta, headDim);
    return scaling.rope_type === 'default' ? null : scaling;
  }
  const type = metadata[`${arch}.rope.scaling.type`];
  const factor = metadata[`${arch}.rope.scaling.factor`];
  if (typeof type !== 'string' || type === 'none' || typeof factor !== 'number') return null;
  const scaling: Record<string, unknown> = { rope_type: type, factor };
  const original = metadata[`${arch}.rope.scaling.original_context_length`];
  if (typeof original === 'number') scaling.original_max_position_embeddings = original;
  return scaling;
}
