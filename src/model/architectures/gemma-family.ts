// What gemma2 and gemma3 share: llama-shaped weights plus an RMSNorm on each sublayer's output
// (post_attention_layernorm, post_feedforward_layernorm) and one before the MLP
// (pre_feedforward_layernorm), a GELU(tanh)-gated MLP, embeddings scaled by sqrt(hidden), a query
// scale from query_pre_attn_scalar, interleaved sliding-window layers and tied embeddings. Norm
// gains are canonical as GGUF stores them (1 + w): Hugging Face checkpoints store w, shifted on
// load. gemma2.ts and gemma3.ts state how they differ.
import { buildDecoderGraph } from '../graph/decoder-graph';
import { decoderSegments } from '../graph/decoder-segments';
import { ggufArchConfig } from '../gguf/gguf-config';
import type { GgufFile } from '../gguf/gguf-file';
import { bf16ToF32, f16ToF32, f32ToF16 } from '../gguf/half';
import { encodeBF16 } from '../gguf/quantize';
import { blockNameMaps } from '../gguf/tensor-names';
import { gv, type GgufTypedValue } from '../gguf/writer';
import type { DecoderArchConfig, ModelOutput, RopeSetting } from '../types';
import type { ArchitectureDescriptor, HfConfigContext, WeightSpec } from './architecture';
import { decoderWeightSpecs, ropeScaling } from './decoder-family';
import { isObject, numberReader, type Json } from './hf-json';

type LayerType = 'full_attention' | 'sliding_attention';

export interface GemmaTraits {
  name: string;
  modelTypes: readonly string[];
  ggufArchitecture: string;
  /** Per-head RMSNorm of q and k before RoPE (gemma3). */
  qkNorm: boolean;
  /** The transformers config class's defaults, for keys a config.json leaves out. */
  hfDefaults: Json;
  /** Layer i slides unless (i + 1) % n === 0 when nothing lists the layer types (llama.cpp's default pattern: gemma3 6, gemma2 2). */
  swaPattern: number;
  /** Sliding layers keep the global RoPE scaling (gemma2: one RoPE for all) rather than none (gemma3). */
  localRopeScaled: boolean;
  /** What llama.cpp assumes when a GGUF lacks the key (gemma2: 4096; gemma3: no window). */
  ggufDefaultWindow: number;
  /**
   * llama.cpp's soft-caps when a GGUF lacks the keys: a number (gemma2 always caps, 50 / 30), 0
   * for none, null where llama.cpp never applies one (gemma3's attention).
   */
  ggufSoftcaps: { attention: number | null; final: number | null };
  /** llama.cpp's default local RoPE base when a GGUF lacks rope.freq_base_swa: null = the global base. */
  ggufDefaultLocalTheta: number | null;
  /** llama.cpp types a gemma model by its layer count and scales the 27B's queries by hidden/heads. */
  ggufWideScaleLayers: number;
}

/** HF name ↔ GGUF name of the blocks' tensors where gemma's differ from llama's (llama.cpp's gguf-py constants). */
const NAMES = blockNameMaps([
  ['post_attention_norm.weight', 'post_attention_layernorm.weight'],
  ['ffn_norm.weight', 'pre_feedforward_layernorm.weight'],
  ['post_ffw_norm.weight', 'post_feedforward_layernorm.weight'],
]);

/** Stored prefixes of the text decoder: Gemma3ForConditionalGeneration checkpoints nest it (old and new transformers layouts). */
const TEXT_PREFIXES: ReadonlyArray<readonly [stored: string, canonical: string]> = [
  ['language_model.model.', 'model.'],
  ['model.language_model.', 'model.'],
  ['language_model.lm_head.', 'lm_head.'],
];

/** Tensors of the vision tower and projector (a text-only server reads none of them) and RoPE buffers. */
const NOT_TEXT_WEIGHTS = /^(model\.)?(vision_tower|multi_modal_projector)\.|\.rotary_emb\.inv_freq$/;

export function gemmaDescriptor(traits: GemmaTraits): ArchitectureDescriptor<DecoderArchConfig> {
  return {
    name: traits.name,
    defaultPooling: 'LAST',
    sentencePairs: false,
    hf: {
      modelTypes: traits.modelTypes,
      config: (json, ctx) => gemmaHfConfig(json, ctx, traits),
      tensorName: (stored, config) => {
        if (NOT_TEXT_WEIGHTS.test(stored)) return null;
        const prefix = TEXT_PREFIXES.find(([from]) => stored.startsWith(from));
        const name = prefix ? prefix[1] + stored.slice(prefix[0].length) : stored;
        return name === 'lm_head.weight' && config.tieWordEmbeddings ? null : name;
      },
      // Gemma's RMSNorm multiplies by (1 + w): every norm gain becomes the factor it applies.
      adjustValues: (name) => (name.endsWith('norm.weight') ? addOne : null),
    },
    gguf: {
      architectures: [traits.ggufArchitecture],
      config: (file, ropeFreqFactors) => gemmaGgufConfig(file, ropeFreqFactors, traits),
      tensorName: NAMES.hfTensorName,
      ggufName: NAMES.ggufTensorName,
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

/** Which layers slide: layer_types when listed, else the family's pattern (every n-th layer global). */
function layerTypesOf(listed: unknown, numLayers: number, pattern: number, source: string): LayerType[] {
  if (Array.isArray(listed)) {
    if (listed.length !== numLayers || !listed.every((t) => t === 'full_attention' || t === 'sliding_attention')) {
      throw new Error(`${source}: layer_types must list 'full_attention' or 'sliding_attention' for each of the ${numLayers} layers`);
    }
    return listed as LayerType[];
  }
  return Array.from({ length: numLayers }, (_, i) => (pattern > 0 && (i + 1) % pattern === 0 ? 'full_attention' : 'sliding_attention'));
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

function sameRope(a: RopeSetting, b: RopeSetting): boolean {
  return a.ropeTheta === b.ropeTheta && JSON.stringify(a.ropeScaling) === JSON.stringify(b.ropeScaling);
}

/** Per layer its RoPE when it differs from the global one (the sliding layers' local base), else absent. */
function layerRope(types: readonly LayerType[], global: RopeSetting, local: RopeSetting): (RopeSetting | null)[] | undefined {
  if (sameRope(global, local) || !types.includes('sliding_attention')) return undefined;
  return types.map((t) => (t === 'sliding_attention' ? local : null));
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && value > 0 ? value : undefined;
}

/** A soft-cap as llama.cpp reads it: the key, else its default (null: never applied). */
function ggufSoftcap(stored: unknown, llamaDefault: number | null): number | undefined {
  if (llamaDefault === null) return undefined;
  return positive(stored) ?? (llamaDefault || undefined);
}

/** The fields every gemma config has, from the family's traits. */
function gemmaLayout(traits: GemmaTraits): Pick<DecoderArchConfig, 'architecture' | 'attentionBias' | 'qkNorm' | 'sandwichNorms' | 'hiddenActivation'> {
  return { architecture: traits.name, attentionBias: false, qkNorm: traits.qkNorm || undefined, sandwichNorms: true, hiddenActivation: 'gelu_tanh' };
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

/** DecoderArchConfig from GGUF metadata, as llama.cpp's gemma2 / gemma3 loaders read it. */
function gemmaGgufConfig(file: GgufFile, ropeFreqFactors: Float32Array | null, traits: GemmaTraits): DecoderArchConfig {
  const base = ggufArchConfig(file, ropeFreqFactors);
  const arch = traits.ggufArchitecture;
  const meta = (key: string): unknown => {
    const value = file.metadata[`${arch}.${key}`];
    return typeof value === 'bigint' ? Number(value) : value;
  };
  const window = positive(meta('attention.sliding_window')) ?? traits.ggufDefaultWindow;
  const pattern = meta('attention.sliding_window_pattern');
  const types: LayerType[] = Array.isArray(pattern)
    ? pattern.map((sliding) => (sliding ? 'sliding_attention' : 'full_attention'))
    : layerTypesOf(undefined, base.numLayers, typeof pattern === 'number' ? pattern : traits.swaPattern, file.path);
  if (types.length !== base.numLayers) throw new Error(`${file.path}: ${arch}.attention.sliding_window_pattern has ${types.length} entries for ${base.numLayers} layers`);
  const global: RopeSetting = { ropeTheta: base.ropeTheta, ropeScaling: base.ropeScaling };
  const localTheta = positive(meta('rope.freq_base_swa')) ?? traits.ggufDefaultLocalTheta ?? base.ropeTheta;
  const local: RopeSetting = { ropeTheta: localTheta, ropeScaling: traits.localRopeScaled ? base.ropeScaling : null };
  // llama.cpp ignores query_pre_attn_scalar (GGUF has no key for it): 1/sqrt(head_dim), or hidden/heads on the 27B shapes.
  const scaleWidth = base.numLayers === traits.ggufWideScaleLayers ? base.hiddenSize / base.numHeads : base.headDim;
  return {
    ...base,
    ...gemmaLayout(traits),
    slidingWindow: window || undefined,
    layerTypes: window ? types : undefined,
    layerRope: window ? layerRope(types, global, local) : undefined,
    attentionScale: 1 / Math.sqrt(scaleWidth),
    embeddingScale: Math.fround(Math.sqrt(base.hiddenSize)),
    attnLogitSoftcap: ggufSoftcap(meta('attn_logit_softcapping'), traits.ggufSoftcaps.attention),
    finalLogitSoftcap: ggufSoftcap(meta('final_logit_softcapping'), traits.ggufSoftcaps.final),
  };
}

/**
 * The gemma keys a GGUF of `config` carries beyond the llama ones. Throws for what llama.cpp
 * cannot read back: its query scale is derived from the shape, never stored.
 */
function gemmaGgufMetadata(config: DecoderArchConfig, traits: GemmaTraits): Record<string, GgufTypedValue> {
  const a = traits.ggufArchitecture;
  const scaleWidth = config.numLayers === traits.ggufWideScaleLayers ? config.hiddenSize / config.numHeads : config.headDim;
  if (config.attentionScale !== undefined && Math.abs(config.attentionScale * Math.sqrt(scaleWidth) - 1) > 1e-6) {
    throw new Error(`${a} GGUF files cannot hold the query scale ${config.attentionScale}: llama.cpp derives it as 1/sqrt(${scaleWidth}) from the shape`);
  }
  const out: Record<string, GgufTypedValue> = {};
  if (config.slidingWindow) {
    out[`${a}.attention.sliding_window`] = gv.u32(config.slidingWindow);
    out[`${a}.attention.sliding_window_pattern`] = gv.bools(Array.from({ length: config.numLayers }, (_, l) => (config.layerTypes?.[l] ?? 'sliding_attention') === 'sliding_attention'));
    const local = config.layerRope?.find((r) => r);
    if (local) {
      if (JSON.stringify(local.ropeScaling) !== JSON.stringify(traits.localRopeScaled ? config.ropeScaling : null)) throw new Error(`${a} GGUF files cannot hold the local layers' RoPE scaling`);
      out[`${a}.rope.freq_base_swa`] = gv.f32(local.ropeTheta);
    } else if (traits.ggufDefaultLocalTheta !== null) {
      out[`${a}.rope.freq_base_swa`] = gv.f32(config.ropeTheta);
    }
  }
  const scaling = config.ropeScaling;
  if (scaling) {
    if (scaling.rope_type !== 'linear') throw new Error(`${a} GGUF files: rope_type ${String(scaling.rope_type)} is not written (linear only)`);
    out[`${a}.rope.scaling.type`] = gv.str('linear');
    out[`${a}.rope.scaling.factor`] = gv.f32(Number(scaling.factor));
  }
  const caps = [
    ['attn_logit_softcapping', config.attnLogitSoftcap, traits.ggufSoftcaps.attention],
    ['final_logit_softcapping', config.finalLogitSoftcap, traits.ggufSoftcaps.final],
  ] as const;
  for (const [key, cap, llamaDefault] of caps) {
    if (cap && llamaDefault === null) throw new Error(`${a} GGUF files cannot hold ${key}: llama.cpp's ${a} applies none`);
    // llama.cpp's gemma2 caps whether or not the key is there: "no cap" has no GGUF spelling.
    if (!cap && llamaDefault) throw new Error(`${a} GGUF files cannot hold a model without ${key} (llama.cpp then uses ${llamaDefault})`);
    if (cap) out[`${a}.${key}`] = gv.f32(cap);
  }
  return out;
}
