// What llama-style decoders (llama, mistral, qwen2, qwen3) share: the config.json mapping, canonical
// weight names (HF's `model.layers.{i}.…`), the GGUF mapping of llama.cpp files and the graphs
// (graph/decoder-graph.ts). Each member (llama.ts, qwen2.ts, qwen3.ts) states only how it differs.

import { buildDecoderGraph, buildDecoderPoolingGraph } from '../graph/decoder-graph';
import { decoderSegments } from '../graph/decoder-segments';
import { ggufArchConfig } from '../gguf/gguf-config';
import { ropePermutedHeads } from '../gguf/rope-permute';
import { ggufTensorName, hfTensorName } from '../gguf/tensor-names';
import { canonicalMoeName, checkMoeConfig, isMoeLayer, moeHfFields, moeWeightShapes } from '../moe/moe-config';
import type { DecoderArchConfig, ModelOutput } from '../types';
import type { ArchitectureDescriptor, HfConfigContext, WeightSpec } from './architecture';
import { isObject, numberReader, type Json } from './hf-json';
import { nestedTextConfig, nestedTextTensorName } from './nested-text';

export interface DecoderTraits {
  name: string;
  modelTypes: readonly string[];
  ggufArchitectures: readonly string[];
  /** q/k/v projections carry biases (qwen2 always; llama when config.json sets attention_bias). */
  attentionBias: (json: Json) => boolean;
  /** The sliding window applies (mistral always when set; qwen2/qwen3 only with use_sliding_window). */
  slidingWindowApplies: (json: Json) => boolean;
  /**
   * Without config.json's layer_types, the first layer the window applies to (HF's default
   * layer_types: mistral 0, every layer; qwen2/qwen3 max_window_layers, the layers from it on).
   */
  firstWindowedLayer: (json: Json) => number;
  /** q and k get a per-head RMSNorm before RoPE (qwen3). */
  qkNorm?: boolean;
  /** llama.cpp interleaves this family's Q/K rows for RoPE when converting (llama: yes, qwen2/qwen3: no). */
  ggufRopeRowsPermuted: boolean;
  /** MoE configs without norm_topk_prob renormalise the top-k weights (mixtral: yes; absent: no MoE default needed). */
  normTopKProbDefault?: boolean;
  /**
   * Vision-language model_types whose text decoder is this family's, under text_config (llava),
   * with the text config class's defaults for what text_config leaves out.
   */
  nestedText?: { modelTypes: readonly string[]; defaults: Json };
}

/** Tensors some checkpoints carry that are not weights (old llama checkpoints saved RoPE tables). */
const NOT_WEIGHTS = /\.rotary_emb\.inv_freq$/;

export function decoderDescriptor(traits: DecoderTraits): ArchitectureDescriptor<DecoderArchConfig> {
  return {
    name: traits.name,
    defaultPooling: 'LAST',
    sentencePairs: false,
    hf: {
      modelTypes: [...traits.modelTypes, ...(traits.nestedText?.modelTypes ?? [])],
      config: (json, ctx) => decoderHfConfig(textConfigOf(json, traits), ctx, traits),
      tensorName: (stored, config, output) => {
        const text = traits.nestedText ? nestedTextTensorName(stored) : stored;
        if (text === null || NOT_WEIGHTS.test(text)) return null;
        stored = canonicalMoeName(text);
        // A tied checkpoint may still store lm_head; the graph uses the embedding. Pooling graphs have no LM head.
        if (stored === 'lm_head.weight' && (config.tieWordEmbeddings || output.kind !== 'logits')) return null;
        return stored;
      },
    },
    gguf: {
      architectures: traits.ggufArchitectures,
      // llama.cpp's converters write no sliding window for these families, and llama.cpp attends over the full context.
      config: (file, ropeFreqFactors) => ({ ...ggufArchConfig(file, ropeFreqFactors), architecture: traits.name, ...(traits.qkNorm ? { qkNorm: true } : {}) }),
      tensorName: hfTensorName,
      ggufName: ggufTensorName,
      ropePermutedHeads: (name, config) => (traits.ggufRopeRowsPermuted ? ropePermutedHeads(name, config) : null),
    },
    weightSpecs: decoderWeightSpecs,
    contextLength: derivedContextLength,
    overrideKeys: Object.keys(DECODER_OVERRIDES),
    applyOverride: (config, key, value) => DECODER_OVERRIDES[key](config, value),
    graphs: {
      causalLm: buildDecoderGraph,
      causalLmSegments: decoderSegments,
      pooling: buildDecoderPoolingGraph,
    },
    // Pooling graphs stay float32: their pooled vectors and classifier heads are compared and
    // sorted by callers, and onnxruntime's CPU float16 kernels are slower at batch sizes > 1.
    graphDtypes: { causalLm: ['float32', 'float16'], causalLmSegments: ['float32', 'float16'], pooling: ['float32'] },
  };
}

/** The text decoder's config.json fields: text_config for the vision-language model_types. */
function textConfigOf(json: Json, traits: DecoderTraits): Json {
  const nested = traits.nestedText;
  return nested && nested.modelTypes.includes(json.model_type as string) ? nestedTextConfig(json, nested.defaults) : json;
}

/** DecoderArchConfig from config.json (LlamaConfig / MistralConfig / Qwen2Config fields). */
export function decoderHfConfig(json: Json, ctx: HfConfigContext, traits: DecoderTraits): DecoderArchConfig {
  const num = numberReader(json, ctx.source);
  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  // transformers >= 4.56 nests rope_theta/rope_type in rope_parameters.
  const ropeParameters = isObject(json.rope_parameters) ? json.rope_parameters : {};
  const ropeTheta = num('rope_theta', typeof ropeParameters.rope_theta === 'number' ? ropeParameters.rope_theta : 10000);
  const numLayers = num('num_hidden_layers');
  const intermediateSize = num('intermediate_size');
  const moe = moeHfFields(json, numLayers, intermediateSize, traits.normTopKProbDefault ?? false);
  checkMoeConfig({ ...moe, hiddenSize, intermediateSize }, ctx.source);
  return {
    architecture: traits.name,
    hiddenSize,
    intermediateSize,
    numLayers,
    numHeads,
    numKvHeads: num('num_key_value_heads', numHeads),
    headDim: num('head_dim', hiddenSize / numHeads),
    vocabSize: num('vocab_size'),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta,
    ropeScaling: ropeScaling(json.rope_scaling ?? json.rope_parameters),
    maxPositionEmbeddings: num('max_position_embeddings', 2048),
    tieWordEmbeddings: typeof json.tie_word_embeddings === 'boolean' ? json.tie_word_embeddings : ctx.hasTensor('lm_head.weight') === false,
    attentionBias: traits.attentionBias(json),
    ...(traits.qkNorm ? { qkNorm: true } : {}),
    ...mropeSectionOf(json.rope_scaling ?? json.rope_parameters, ctx.source),
    ...slidingWindow(json, ctx.source, numLayers, traits),
    ...moe,
  };
}

const LAYER_TYPES = ['full_attention', 'sliding_attention'] as const;

/** slidingWindow and layerTypes from config.json (HF's sliding_window and layer_types, or its default layer_types). */
function slidingWindow(json: Json, source: string, numLayers: number, traits: DecoderTraits): Pick<DecoderArchConfig, 'slidingWindow' | 'layerTypes'> {
  const window = json.sliding_window;
  if (!traits.slidingWindowApplies(json) || typeof window !== 'number' || !(window > 0)) return {};
  const listed = json.layer_types;
  if (listed !== undefined && listed !== null) {
    if (!Array.isArray(listed) || listed.length !== numLayers || !listed.every((t) => LAYER_TYPES.includes(t as never))) {
      throw new Error(`${source}: config.json layer_types must list ${numLayers} of ${LAYER_TYPES.join(' / ')}`);
    }
    return { slidingWindow: window, layerTypes: listed as DecoderArchConfig['layerTypes'] };
  }
  const first = traits.firstWindowedLayer(json);
  if (first <= 0) return { slidingWindow: window };
  return { slidingWindow: window, layerTypes: Array.from({ length: numLayers }, (_, l) => (l >= first ? 'sliding_attention' : 'full_attention')) };
}

/** --hf-overrides keys of the decoders (graph-shaping ones; weights do not depend on them). */
const DECODER_OVERRIDES: Readonly<Record<string, (config: DecoderArchConfig, value: unknown) => DecoderArchConfig>> = {
  rope_theta: (config, value) => {
    if (typeof value !== 'number' || !(value > 0)) throw new Error('rope_theta must be a positive number');
    return { ...config, ropeTheta: value };
  },
  rope_scaling: (config, value) => {
    if (value !== null && (typeof value !== 'object' || Array.isArray(value))) throw new Error('rope_scaling must be a JSON object or null');
    return { ...config, ropeScaling: ropeScaling(value), ...mropeSectionOf(value, '--hf-overrides') };
  },
  max_position_embeddings: (config, value) => {
    if (!Number.isInteger(value) || (value as number) < 1) throw new Error('max_position_embeddings must be a positive integer');
    return { ...config, maxPositionEmbeddings: value as number };
  },
};

/** rope_scaling with `rope_type` (older configs call it `type`); null for none or 'default'. */
export function ropeScaling(value: unknown): Record<string, unknown> | null {
  if (!isObject(value)) return null;
  const { type, rope_theta: _theta, mrope_section: _section, ...rest } = value;
  const ropeType = rest.rope_type ?? type;
  // Qwen2-VL's 'mrope' is transformers' default rotation with the section read apart (mropeSectionOf).
  if (ropeType === undefined || ropeType === 'default' || ropeType === 'mrope') return null;
  return { ...rest, rope_type: ropeType };
}

/** Qwen2-VL / Qwen2.5-VL's rope_scaling.mrope_section ([t, h, w] rotary half-dims), where given. */
function mropeSectionOf(value: unknown, source: string): Pick<DecoderArchConfig, 'mropeSection'> {
  if (!isObject(value) || value.mrope_section === undefined || value.mrope_section === null) return {};
  const section = value.mrope_section;
  if (!Array.isArray(section) || section.length !== 3 || !section.every((n) => Number.isInteger(n) && n >= 0)) {
    throw new Error(`${source}: rope_scaling.mrope_section must be three non-negative integers, got ${JSON.stringify(section)}`);
  }
  // Qwen3-VL interleaves the axes over the frequencies instead of taking them in runs.
  if (value.mrope_interleaved === true) throw new Error(`${source}: rope_scaling.mrope_interleaved (Qwen3-VL's M-RoPE layout) is not supported`);
  return { mropeSection: [section[0], section[1], section[2]] };
}

/**
 * vLLM's derived max_model_len: RoPE scaling that stretches positions (linear, dynamic, yarn)
 * multiplies the trained length by its factor (yarn from original_max_position_embeddings);
 * llama3 / longrope configs already state the extended length.
 */
export function derivedContextLength(config: DecoderArchConfig): number {
  const scaling = config.ropeScaling;
  const factor = Number(scaling?.factor);
  if (!scaling || !(factor > 1) || !['linear', 'dynamic', 'yarn'].includes(String(scaling.rope_type))) {
    return config.maxPositionEmbeddings;
  }
  const original = scaling.original_max_position_embeddings;
  const base = scaling.rope_type === 'yarn' && typeof original === 'number' ? original : config.maxPositionEmbeddings;
  return Math.floor(base * factor);
}

const LOGITS: ModelOutput = { kind: 'logits' };

/** The decoder's weights (HF names, [out, in] shapes) for what its runner returns. */
export function decoderWeightSpecs(config: DecoderArchConfig, output: ModelOutput = LOGITS): WeightSpec[] {
  const { hiddenSize: h, intermediateSize: ffn, numHeads, numKvHeads, headDim, vocabSize } = config;
  const q = numHeads * headDim;
  const kv = numKvHeads * headDim;
  const specs: WeightSpec[] = [{ name: 'model.embed_tokens.weight', shape: [vocabSize, h], isNorm: false }];
  for (let i = 0; i < config.numLayers; i++) {
    const p = `model.layers.${i}.`;
    specs.push(
      { name: `${p}input_layernorm.weight`, shape: [h], isNorm: true },
      { name: `${p}self_attn.q_proj.weight`, shape: [q, h], isNorm: false },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, h], isNorm: false },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, h], isNorm: false },
    );
    if (config.attentionBias) {
      specs.push(
        { name: `${p}self_attn.q_proj.bias`, shape: [q], isNorm: false },
        { name: `${p}self_attn.k_proj.bias`, shape: [kv], isNorm: false },
        { name: `${p}self_attn.v_proj.bias`, shape: [kv], isNorm: false },
      );
    }
    if (config.qkNorm) {
      specs.push({ name: `${p}self_attn.q_norm.weight`, shape: [headDim], isNorm: true }, { name: `${p}self_attn.k_norm.weight`, shape: [headDim], isNorm: true });
    }
    specs.push(
      { name: `${p}self_attn.o_proj.weight`, shape: [h, q], isNorm: false },
      { name: `${p}post_attention_layernorm.weight`, shape: [h], isNorm: true },
    );
    if (isMoeLayer(config, i)) {
      specs.push(...moeWeightShapes(config, p).map((w) => ({ ...w, isNorm: false })));
    } else {
      specs.push(
        { name: `${p}mlp.gate_proj.weight`, shape: [ffn, h], isNorm: false },
        { name: `${p}mlp.up_proj.weight`, shape: [ffn, h], isNorm: false },
        { name: `${p}mlp.down_proj.weight`, shape: [h, ffn], isNorm: false },
      );
    }
  }
  specs.push({ name: 'model.norm.weight', shape: [h], isNorm: true });
  if (output.kind === 'logits' && !config.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [vocabSize, h], isNorm: false });
  // *ForSequenceClassification checkpoints (and decoders converted to classifiers) score the pooled state.
  if (output.kind === 'classifier') specs.push({ name: 'score.weight', shape: [output.numLabels, h], isNorm: false });
  return specs;
}
