// What gemma2 and gemma3 share: llama-shaped weights plus an RMSNorm on each sublayer's output
// (post_attention_layernorm, post_feedforward_layernorm) and one before the MLP
// (pre_feedforward_layernorm), a GELU(tanh)-gated MLP, embeddings scaled by sqrt(hidden), a query
// scale from query_pre_attn_scalar, interleaved sliding-window layers and tied embeddings. Norm
// gains are canonical as GGUF stores them (1 + w): Hugging Face checkpoints store w, shifted on
// load. gemma2.ts and gemma3.ts state how they differ; gemma-gguf.ts is the GGUF side.
import { buildDecoderGraph } from '../graph/decoder-graph';
import { decoderSegments } from '../graph/decoder-segments';
import { bf16ToF32, f16ToF32, f32ToF16 } from '../gguf/half';
import { encodeBF16 } from '../gguf/quantize';
import type { DecoderArchConfig, ModelOutput, RopeSetting } from '../types';
import type { ArchitectureDescriptor, HfConfigContext, WeightSpec } from './architecture';
import { decoderWeightSpecs, ropeScaling } from './decoder-family';
import { GEMMA_TENSOR_NAMES, gemmaGgufConfig, gemmaGgufMetadata } from './gemma-gguf';
import { gemmaLayout, layerRope, layerTypesOf, positive, type GemmaTraits } from './gemma-traits';
import { isObject, numberReader, type Json } from './hf-json';
import { nestedTextTensorName } from './nested-text';

export function gemmaDescriptor(traits: GemmaTraits): ArchitectureDescriptor<DecoderArchConfig> {
  return {
    name: traits.name,
    defaultPooling: 'LAST',
    sentencePairs: false,
    hf: {
      modelTypes: traits.modelTypes,
      config: (json, ctx) => gemmaHfConfig(json, ctx, traits),
      tensorName: (stored, config) => {
        const name = nestedTextTensorName(stored);
        return name === 'lm_head.weight' && config.tieWordEmbeddings ? null : name;
      },
      // Gemma's RMSNorm multiplies by (1 + w): every norm gain becomes the factor it applies.
      adjustValues: (name) => (name.endsWith('norm.weight') ? addOne : null),
    },
    gguf: {
      architectures: [traits.ggufArchitecture],
      config: (file, ropeFreqFactors) => gemmaGgufConfig(file, ropeFreqFactors, traits),
      tensorName: GEMMA_TENSOR_NAMES.hfTensorName,
      ggufName: GEMMA_TENSOR_NAMES.ggufTensorName,
      ropePermutedHeads: () => null,
      metadata: (config) => gemmaGgufMetadata(config, traits),
    },
    weightSpecs: gemmaWeightSpecs,
    // Gemma's max_position_embeddings already counts the linear RoPE scaling (vLLM does not multiply it either).
    contextLength: (config) => config.maxPositionEmbeddings,
    graphs: { causalLm: buildDecoderGraph, causalLmSegments: decoderSegments },
    graphDtypes: { causalLm: ['float32'], causalLmSegments: ['float32', 'float16'] },
  };
}

function addOne(values: Float32Array): void {
  for (let i = 0; i < values.length; i++) values[i] += 1;
}

/** The decoder's weights plus the pre- and post-feedforward norms of each layer. */
export function gemmaWeightSpecs(config: DecoderArchConfig, output: ModelOutput = { kind: 'logits' }): WeightSpec[] {
  const specs = decoderWeightSpecs(config, output);
  for (let i = 0; i < config.numLayers; i++) {
    for (const norm of ['pre_feedforward_layernorm', 'post_feedforward_layernorm']) {
      specs.push({ name: `model.layers.${i}.${norm}.weight`, shape: [config.hiddenSize], isNorm: true });
    }
  }
  return specs;
}

/** sqrt(hidden) as the checkpoint's dtype holds it: transformers casts the normalizer to the weights' dtype before multiplying. */
function embeddingScale(hidden: number, dtype: unknown): number {
  const scale = Math.fround(Math.sqrt(hidden));
  if (dtype === 'bfloat16') {
    const bytes = encodeBF16(Float32Array.of(scale));
    return bf16ToF32(bytes[0] | (bytes[1] << 8));
  }
  return dtype === 'float16' ? f16ToF32(f32ToF16(scale)) : scale;
}

/**
 * The global and local RoPE settings: transformers >= 4.56 nests them per layer type in
 * rope_parameters; older configs have rope_theta + rope_scaling (global) and rope_local_base_freq.
 */
function hfRope(text: Json, traits: GemmaTraits): { global: RopeSetting; local: RopeSetting } {
  const params = isObject(text.rope_parameters) ? text.rope_parameters : null;
  const theta = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);
  if (params && (isObject(params.full_attention) || isObject(params.sliding_attention))) {
    const full = isObject(params.full_attention) ? params.full_attention : {};
    const sliding = isObject(params.sliding_attention) ? params.sliding_attention : full;
    return {
      global: { ropeTheta: theta(full.rope_theta, theta(text.rope_theta, 10000)), ropeScaling: ropeScaling(full) },
      local: { ropeTheta: theta(sliding.rope_theta, theta(text.rope_local_base_freq, 10000)), ropeScaling: ropeScaling(sliding) },
    };
  }
  const global = { ropeTheta: theta(params?.rope_theta, theta(text.rope_theta, 10000)), ropeScaling: ropeScaling(text.rope_scaling ?? params) };
  if (traits.localRopeScaled) return { global, local: global };
  return { global, local: { ropeTheta: theta(text.rope_local_base_freq, 10000), ropeScaling: null } };
}

/** DecoderArchConfig from config.json (Gemma2Config, Gemma3TextConfig, or Gemma3Config's text_config). */
function gemmaHfConfig(json: Json, ctx: HfConfigContext, traits: GemmaTraits): DecoderArchConfig {
  const text: Json = { ...traits.hfDefaults, ...(isObject(json.text_config) ? json.text_config : json) };
  const num = numberReader(text, ctx.source);
  const activation = text.hidden_activation ?? text.hidden_act;
  if (activation !== 'gelu_pytorch_tanh') {
    throw new Error(`${ctx.source}: hidden_activation ${JSON.stringify(activation)} is not supported for ${traits.name} (gelu_pytorch_tanh)`);
  }
  const hiddenSize = num('hidden_size');
  const numLayers = num('num_hidden_layers');
  const numHeads = num('num_attention_heads');
  const window = positive(text.sliding_window);
  const types = layerTypesOf(text.layer_types, numLayers, num('sliding_window_pattern', traits.swaPattern), ctx.source);
  const rope = hfRope(text, traits);
  return {
    ...gemmaLayout(traits),
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers,
    numHeads,
    numKvHeads: num('num_key_value_heads', numHeads),
    headDim: num('head_dim', hiddenSize / numHeads),
    vocabSize: num('vocab_size'),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ...rope.global,
    maxPositionEmbeddings: num('max_position_embeddings'),
    tieWordEmbeddings: text.tie_word_embeddings !== false,
    slidingWindow: window,
    layerTypes: window ? types : undefined,
    // transformers picks the local RoPE by layer type, window or not.
    layerRope: layerRope(types, rope.global, rope.local),
    attentionScale: num('query_pre_attn_scalar') ** -0.5,
    embeddingScale: embeddingScale(hiddenSize, json.torch_dtype ?? json.dtype ?? text.torch_dtype ?? text.dtype),
    attnLogitSoftcap: positive(text.attn_logit_softcapping),
    finalLogitSoftcap: positive(text.final_logit_softcapping),
  };
}

