// Phi-3 / Phi-3.5-mini / Phi-4-mini (Phi3ForCausalLM, GGUF arch `phi3`): a llama-style decoder
// whose checkpoints store q/k/v as one `qkv_proj` ([q; k; v] rows) and gate/up as one
// `gate_up_proj` ([gate; up] rows; GGUF `attn_qkv`, `ffn_up` of 2 x n_ff rows), split on load into
// the canonical weights; RoPE on the first partial_rotary_factor of each head (Phi-4-mini 0.75;
// GGUF rope.dimension_count) and LongRoPE (rope_scaling long/short factors; GGUF
// rope_factors_long / rope_factors_short tensors). Q/K rows are not permuted in GGUF (NEOX RoPE).
import { readGgufTensorAsF32 } from '../gguf/gguf-weights';
import { ggufArchConfig } from '../gguf/gguf-config';
import type { GgufFile } from '../gguf/gguf-file';
import { ggufTensorName, hfTensorName } from '../gguf/tensor-names';
import type { DecoderArchConfig, ModelOutput } from '../types';
import type { WeightMap } from '../weight-map';
import type { ArchitectureDescriptor, HfConfigContext, WeightSpec } from './architecture';
import { decoderDescriptor, decoderWeightSpecs } from './decoder-family';
import { splitFusedRows } from './fused-weights';
import { isObject, type Json } from './hf-json';
import { longRopeAttentionFactor } from '../graph/rope';

const family = decoderDescriptor({
  name: 'phi3',
  modelTypes: ['phi3'],
  ggufArchitectures: ['phi3'],
  attentionBias: () => false,
  // HF's Phi3Attention passes config.sliding_window to every layer.
  slidingWindowApplies: () => true,
  firstWindowedLayer: () => 0,
  ggufRopeRowsPermuted: false,
});

/** Fused tensors as stored (HF name, GGUF block name) and the canonical weights they hold. */
const FUSED = {
  qkv: { hf: 'self_attn.qkv_proj.weight', gguf: 'attn_qkv.weight' },
  gateUp: { hf: 'mlp.gate_up_proj.weight', gguf: 'ffn_up.weight' },
} as const;

const SPLIT_AWAY = new Set(['self_attn.q_proj.weight', 'self_attn.k_proj.weight', 'self_attn.v_proj.weight', 'mlp.gate_proj.weight', 'mlp.up_proj.weight']);

/** llama.cpp's LongRoPE tables: config, not weights. */
const ROPE_FACTORS = { long: 'rope_factors_long.weight', short: 'rope_factors_short.weight' } as const;

export const phi3: ArchitectureDescriptor<DecoderArchConfig> = {
  ...family,
  hf: { ...family.hf, config: phi3HfConfig },
  gguf: {
    ...family.gguf!,
    config: phi3GgufConfig,
    tensorName: (name) => (name === ROPE_FACTORS.long || name === ROPE_FACTORS.short ? null : fusedHfName(name) ?? hfTensorName(name)),
    ggufName: (name) => fusedGgufName(name) ?? ggufTensorName(name),
  },
  weightSpecs: phi3WeightSpecs,
  unfuseWeights: splitPhi3Weights,
};

function phi3HfConfig(json: Json, ctx: HfConfigContext): DecoderArchConfig {
  const config = family.hf.config(json, ctx);
  // transformers >= 4.56 may nest it in rope_parameters with rope_theta and the LongRoPE factors.
  const nested = isObject(json.rope_parameters) ? json.rope_parameters.partial_rotary_factor : undefined;
  const factor = json.partial_rotary_factor ?? nested;
  const rotaryDim = typeof factor === 'number' ? Math.floor(config.headDim * factor) : config.headDim;
  if (rotaryDim <= 0 || rotaryDim > config.headDim || rotaryDim % 2) {
    throw new Error(`${ctx.source}: partial_rotary_factor ${String(factor)} gives ${rotaryDim} rotary dims of head size ${config.headDim}`);
  }
  const scaling = config.ropeScaling;
  // Old Phi-3 configs name LongRoPE 'su'; HF reads the pretrained length from the top level.
  const longRope = scaling && (scaling.rope_type === 'longrope' || scaling.rope_type === 'su');
  const ropeScaling = longRope ? longRopeFromHf(scaling, json, ctx.source) : scaling;
  return { ...config, ropeScaling, ...(rotaryDim < config.headDim ? { rotaryDim } : {}) };
}

/**
 * rope_scaling of type longrope with original_max_position_embeddings and attention_factor
 * filled in: HF derives the factor from max_position_embeddings / original (not `factor`), and
 * computes it here once so a --max-model-len or window cap of the context does not change it.
 */
function longRopeFromHf(scaling: Record<string, unknown>, json: Json, source: string): Record<string, unknown> {
  const original = json.original_max_position_embeddings ?? scaling.original_max_position_embeddings;
  const maxPositions = json.max_position_embeddings;
  if (typeof original !== 'number' || typeof maxPositions !== 'number') {
    throw new Error(`${source}: LongRoPE needs max_position_embeddings and original_max_position_embeddings`);
  }
  const given = scaling.attention_factor;
  return {
    ...scaling,
    rope_type: 'longrope',
    original_max_position_embeddings: original,
    attention_factor: typeof given === 'number' ? given : longRopeAttentionFactor(maxPositions / original, original),
  };
}

/** As llama.cpp's phi3 loader reads a converted file (convert_hf_to_gguf.py Phi3MiniModel). */
function phi3GgufConfig(file: GgufFile): DecoderArchConfig {
  const config = { ...ggufArchConfig(file, null), architecture: phi3.name };
  const meta = file.metadata;
  const key = (name: string) => meta[`phi3.${name}`];
  const long = readGgufTensorAsF32(file, ROPE_FACTORS.long);
  const short = readGgufTensorAsF32(file, ROPE_FACTORS.short);
  if (!long !== !short) throw new Error(`${file.path}: LongRoPE needs both ${ROPE_FACTORS.long} and ${ROPE_FACTORS.short}`);
  if (long && short) {
    const original = Number(key('rope.scaling.original_context_length'));
    if (!(original > 0)) throw new Error(`${file.path}: LongRoPE factors without phi3.rope.scaling.original_context_length`);
    const attnFactor = key('rope.scaling.attn_factor');
    config.ropeScaling = {
      rope_type: 'longrope',
      long_factor: [...long],
      short_factor: [...short],
      original_max_position_embeddings: original,
      attention_factor: typeof attnFactor === 'number' ? attnFactor : 1,
    };
  }
  // Every layer slides, as HF's Phi3Attention applies config.sliding_window (the HF directory and
  // its GGUF serve alike). llama.cpp's phi3 loader turns the window off; the released Phi-3.5 /
  // Phi-4-mini windows (262144) exceed their context, so only older Phi-3 files tell them apart.
  const window = Number(key('attention.sliding_window') ?? 0);
  return window > 0 ? { ...config, slidingWindow: window } : config;
}

function fusedHfName(ggufName: string): string | null {
  const m = /^blk\.(\d+)\.(.+)$/.exec(ggufName);
  const fused = m && Object.values(FUSED).find((f) => f.gguf === m[2]);
  return fused ? `model.layers.${m[1]}.${fused.hf}` : null;
}

function fusedGgufName(hfName: string): string | null {
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hfName);
  const fused = m && Object.values(FUSED).find((f) => f.hf === m[2]);
  return fused ? `blk.${m[1]}.${fused.gguf}` : null;
}

/** The decoder's weights as phi3 checkpoints store them: q/k/v and gate/up fused. */
function phi3WeightSpecs(config: DecoderArchConfig, output?: ModelOutput): WeightSpec[] {
  const { hiddenSize: h, intermediateSize: ffn, numHeads, numKvHeads, headDim } = config;
  const specs: WeightSpec[] = [];
  for (const spec of decoderWeightSpecs(config, output)) {
    const m = /^model\.layers\.(\d+)\.(.+)$/.exec(spec.name);
    if (m && m[2] === 'self_attn.o_proj.weight') {
      specs.push({ name: `model.layers.${m[1]}.${FUSED.qkv.hf}`, shape: [(numHeads + 2 * numKvHeads) * headDim, h], isNorm: false });
    }
    if (m && m[2] === 'mlp.down_proj.weight') specs.push({ name: `model.layers.${m[1]}.${FUSED.gateUp.hf}`, shape: [2 * ffn, h], isNorm: false });
    if (!m || !SPLIT_AWAY.has(m[2])) specs.push(spec);
  }
  return specs;
}

function splitPhi3Weights(config: DecoderArchConfig, weights: WeightMap): void {
  const q = config.numHeads * config.headDim;
  const kv = config.numKvHeads * config.headDim;
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}.`;
    splitFusedRows(weights, p + FUSED.qkv.hf, [
      [`${p}self_attn.q_proj.weight`, q],
      [`${p}self_attn.k_proj.weight`, kv],
      [`${p}self_attn.v_proj.weight`, kv],
    ]);
    splitFusedRows(weights, p + FUSED.gateUp.hf, [
      [`${p}mlp.gate_proj.weight`, config.intermediateSize],
      [`${p}mlp.up_proj.weight`, config.intermediateSize],
    ]);
  }
}
