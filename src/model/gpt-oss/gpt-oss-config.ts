// gpt-oss (GptOssForCausalLM; GGUF arch `gpt-oss`, llama.cpp's LLM_ARCH_OPENAI_MOE): a decoder
// whose every layer is attention with learned sinks and biases, alternating sliding-window
// (128) and full layers, YaRN RoPE, and a MoE MLP (router with bias, top-k of the logits then a
// softmax over the k, experts with biases and a clamped SwiGLU). This file reads its config from
// config.json or GGUF metadata.
import { decoderHfConfig, type DecoderTraits } from '../architectures/decoder-family';
import { numberReader, type Json } from '../architectures/hf-json';
import type { HfConfigContext } from '../architectures/architecture';
import { ggufArchConfig } from '../gguf/gguf-config';
import type { GgufFile } from '../gguf/gguf-file';
import { gv, type GgufTypedValue } from '../gguf/writer';
import { checkMoeConfig } from '../moe/moe-config';
import type { DecoderArchConfig } from '../types';

/** How an HF checkpoint stores the experts (GGUF files and the canonical weights: split, [out, in]). */
export type GptOssExpertStorage = 'split' | 'fused' | 'mxfp4';

export interface GptOssArchConfig extends DecoderArchConfig {
  // Every layer is a MoE layer (the MoE decoders' fields, required here).
  numExperts: number;
  numExpertsPerToken: number;
  expertIntermediateSize: number;
  // gpt-oss's own.
  /** The clamp of the experts' SwiGLU: gate to (-inf, limit], up to [-limit, limit] (config.json swiglu_limit). */
  swigluLimit: number;
  /** The experts' GLU slope: glu = gate * sigmoid(alpha * gate). */
  swigluAlpha: number;
  /** How the HF checkpoint stores the experts; the loader turns them into the split canonical form. */
  expertStorage: GptOssExpertStorage;
}

/** Both transformers' GptOssExperts and llama.cpp's swiglu_oai use these. */
export const GPT_OSS_SWIGLU_ALPHA = 1.702;
const GPT_OSS_SWIGLU_LIMIT = 7.0;
/** llama.cpp's default pattern for gpt-oss files without one: layer l slides when l % 2 == 0. */
const GGUF_SWA_PATTERN = 2;

/** What config.json shares with the llama-style decoders (read by decoder-family.ts). */
const GPT_OSS_TRAITS: DecoderTraits = {
  name: 'gpt-oss',
  modelTypes: ['gpt_oss'],
  ggufArchitectures: ['gpt-oss'],
  attentionBias: () => true,
  slidingWindowApplies: () => true,
  firstWindowedLayer: () => 0,
  ggufRopeRowsPermuted: false,
  normTopKProbDefault: true,
};

export function gptOssHfConfig(json: Json, ctx: HfConfigContext): GptOssArchConfig {
  // openai's own configs name the top-k experts_per_token; transformers' num_experts_per_tok.
  const base = decoderHfConfig({ num_experts_per_tok: json.experts_per_token, ...json }, ctx, GPT_OSS_TRAITS);
  const { numExperts, numExpertsPerToken, expertIntermediateSize } = base;
  if (!numExperts || !numExpertsPerToken || !expertIntermediateSize) throw new Error(`${ctx.source}: config.json lacks num_local_experts or num_experts_per_tok`);
  const num = numberReader(json, ctx.source);
  // Without layer_types, transformers' GptOssConfig slides on the even layers.
  const layerTypes = base.layerTypes ?? Array.from({ length: base.numLayers }, (_, l) => (l % 2 === 0 ? 'sliding_attention' : 'full_attention'));
  return {
    ...base,
    ...(base.slidingWindow ? { layerTypes } : {}),
    numExperts,
    numExpertsPerToken,
    expertIntermediateSize,
    swigluLimit: num('swiglu_limit', GPT_OSS_SWIGLU_LIMIT),
    swigluAlpha: GPT_OSS_SWIGLU_ALPHA,
    expertStorage: hfExpertStorage(ctx),
  };
}

function hfExpertStorage(ctx: HfConfigContext): GptOssExpertStorage {
  if (ctx.hasTensor('model.layers.0.mlp.experts.gate_up_proj_blocks')) return 'mxfp4';
  if (ctx.hasTensor('model.layers.0.mlp.experts.gate_up_proj')) return 'fused';
  return 'split';
}

/**
 * The config of a llama.cpp gpt-oss file. llama.cpp always truncates YaRN's correction range
 * (ggml_rope_yarn_corr_dims floors and ceils it), so GGUF configs never carry `truncate: false`.
 */
export function gptOssGgufConfig(file: GgufFile, ropeFreqFactors: Float32Array | null): GptOssArchConfig {
  const base = ggufArchConfig(file, ropeFreqFactors);
  const { metadata, path } = file;
  const key = (k: string) => metadata[`gpt-oss.${k}`];
  const num = (k: string, fallback?: number): number => {
    const value = key(k);
    if (typeof value === 'number' || typeof value === 'bigint') return Number(value);
    if (fallback !== undefined) return fallback;
    throw new Error(`${path}: GGUF metadata lacks gpt-oss.${k}`);
  };
  const numExperts = num('expert_count');
  const numExpertsPerToken = num('expert_used_count');
  const expertIntermediateSize = num('expert_feed_forward_length');
  checkMoeConfig({ numExperts, numExpertsPerToken, expertIntermediateSize, hiddenSize: base.hiddenSize, intermediateSize: base.intermediateSize }, path);
  const slidingWindow = num('attention.sliding_window', 0);
  const ropeScaling = base.ropeScaling && {
    ...base.ropeScaling,
    beta_fast: num('rope.scaling.yarn_beta_fast', 32),
    beta_slow: num('rope.scaling.yarn_beta_slow', 1),
  };
  return {
    ...base,
    architecture: 'gpt-oss',
    ropeScaling,
    ...(slidingWindow > 0 ? { slidingWindow, layerTypes: ggufLayerTypes(key('attention.sliding_window_pattern'), base.numLayers) } : {}),
    numExperts,
    numExpertsPerToken,
    expertIntermediateSize,
    normTopKProb: true,
    swigluLimit: GPT_OSS_SWIGLU_LIMIT,
    swigluAlpha: GPT_OSS_SWIGLU_ALPHA,
    expertStorage: 'split',
  };
}

/** llama.cpp's load_swa_pattern: a per-layer array (true = sliding), a period n (layer l slides when l % n < n - 1), or 2. */
function ggufLayerTypes(pattern: unknown, numLayers: number): DecoderArchConfig['layerTypes'] {
  const slides = (l: number): boolean => {
    if (Array.isArray(pattern)) return Boolean(pattern[l]);
    const n = typeof pattern === 'number' ? pattern : GGUF_SWA_PATTERN;
    return n === 0 || l % n < n - 1;
  };
  return Array.from({ length: numLayers }, (_, l) => (slides(l) ? 'sliding_attention' : 'full_attention'));
}

/** The gpt-oss.* keys llama.cpp's converter writes beyond the decoders' common ones (model writers). */
export function gptOssGgufMetadata(config: GptOssArchConfig): Record<string, GgufTypedValue> {
  const a = 'gpt-oss';
  const scaling = config.ropeScaling;
  return {
    [`${a}.expert_count`]: gv.u32(config.numExperts),
    [`${a}.expert_used_count`]: gv.u32(config.numExpertsPerToken),
    [`${a}.expert_feed_forward_length`]: gv.u32(config.expertIntermediateSize),
    ...(config.slidingWindow ? { [`${a}.attention.sliding_window`]: gv.u32(config.slidingWindow) } : {}),
    ...(scaling?.rope_type === 'yarn'
      ? {
          [`${a}.rope.scaling.type`]: gv.str('yarn'),
          [`${a}.rope.scaling.factor`]: gv.f32(Number(scaling.factor)),
          [`${a}.rope.scaling.original_context_length`]: gv.u32(Number(scaling.original_max_position_embeddings)),
          [`${a}.rope.scaling.yarn_beta_fast`]: gv.f32(Number(scaling.beta_fast ?? 32)),
          [`${a}.rope.scaling.yarn_beta_slow`]: gv.f32(Number(scaling.beta_slow ?? 1)),
        }
      : {}),
  };
}
