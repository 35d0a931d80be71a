// Gemma's GGUF side, as llama.cpp's gemma2 / gemma3 loaders and converter read and write it: tensor
// names, metadata keys and llama.cpp's defaults where a file leaves a key out.
import { ggufArchConfig } from '../gguf/gguf-config';
import type { GgufFile } from '../gguf/gguf-file';
import { blockNameMaps } from '../gguf/tensor-names';
import { gv, type GgufTypedValue } from '../gguf/writer';
import type { DecoderArchConfig, RopeSetting } from '../types';
import { gemmaLayout, layerRope, layerTypesOf, positive, type GemmaTraits, type LayerType } from './gemma-traits';

/** HF name ↔ GGUF name of the blocks' tensors where gemma's differ from llama's (llama.cpp's gguf-py constants). */
export const GEMMA_TENSOR_NAMES = blockNameMaps([
  ['post_attention_norm.weight', 'post_attention_layernorm.weight'],
  ['ffn_norm.weight', 'pre_feedforward_layernorm.weight'],
  ['post_ffw_norm.weight', 'post_feedforward_layernorm.weight'],
]);

/** A soft-cap as llama.cpp reads it: the key, else its default (null: never applied). */
function ggufSoftcap(stored: unknown, llamaDefault: number | null): number | undefined {
  if (llamaDefault === null) return undefined;
  return positive(stored) ?? (llamaDefault || undefined);
}

/** DecoderArchConfig from GGUF metadata, as llama.cpp's gemma2 / gemma3 loaders read it. */
export function gemmaGgufConfig(file: GgufFile, ropeFreqFactors: Float32Array | null, traits: GemmaTraits): DecoderArchConfig {
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
export function gemmaGgufMetadata(config: DecoderArchConfig, traits: GemmaTraits): Record<string, GgufTypedValue> {
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
