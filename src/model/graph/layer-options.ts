// What differs from one decoder layer to the next outside its weights: the attention's options
// (sliding window, logit soft-cap, scale, sinks) and the RoPE table. The segmented decoder hands
// them to the backends, which pass the attention options to the native kernel and feed each
// layer the rows of its own table (one table per distinct RoPE setting, shared by its layers).
import type { DecoderArchConfig, RopeSetting } from '../types';
import { ropeTables, rotaryDimOf } from './rope';

/** One layer's arguments to NativeKernels.attention after `scale` (window 0 / softcap 0 / sinks null: none). */
export interface LayerAttention {
  /** Positions a query sees back, itself included (0: all). */
  window: number;
  /** softcap * tanh(score / softcap) on each scaled score (0: none). */
  softcap: number;
  scale: number;
  /** [numHeads] learned logits added to each head's softmax denominator, or null. */
  sinks: Float32Array | null;
}

/** A RoPE table: cos and sin [positions, half] row-major. */
export interface RopeTable {
  cos: Float32Array;
  sin: Float32Array;
  half: number;
  /** M-RoPE models: the half-dims taken by the t, h and w positions (DecoderArchConfig.mropeSection). */
  mropeSection?: readonly [number, number, number];
}

/** One layer's options as the backends read them. */
export interface DecoderLayerOptions {
  attention: LayerAttention;
  /** Its RoPE table (the same object for every layer of one setting), or null without RoPE. */
  rope: RopeTable | null;
}

/** Layer l's sliding window per the config (0: full attention). */
export function slidingWindowOf(config: DecoderArchConfig, l: number): number {
  const window = config.slidingWindow ?? 0;
  if (!(window > 0)) return 0;
  const type = config.layerTypes?.[l] ?? 'sliding_attention';
  return type === 'sliding_attention' ? window : 0;
}

/** Layer l's attention options from the config (no sinks: families with them add theirs). */
export function layerAttention(config: DecoderArchConfig, l: number): LayerAttention {
  return { window: slidingWindowOf(config, l), softcap: config.attnLogitSoftcap ?? 0, scale: config.attentionScale ?? 1 / Math.sqrt(config.headDim), sinks: null };
}

/**
 * Every layer's options: one RoPE table per distinct setting (config.layerRope, else the config's
 * own). `maxModelLen` (the server's max_model_len) picks LongRoPE's table (rope.ts).
 */
export function decoderLayerOptions(config: DecoderArchConfig, maxPositions: number, maxModelLen = maxPositions): DecoderLayerOptions[] {
  const tables = new Map<string, RopeTable>();
  const tableOf = (setting: RopeSetting): RopeTable => {
    const key = JSON.stringify([setting.ropeTheta, setting.ropeScaling]);
    let table = tables.get(key);
    if (!table) {
      table = { ...ropeTables({ ...config, ...setting }, maxPositions, maxModelLen), half: rotaryDimOf(config) / 2 };
      if (config.mropeSection) table.mropeSection = checkedMropeSection(config.mropeSection, table.half);
      tables.set(key, table);
    }
    return table;
  };
  return Array.from({ length: config.numLayers }, (_, l) => ({
    attention: layerAttention(config, l),
    rope: tableOf(config.layerRope?.[l] ?? config),
  }));
}

/** True when some layer's RoPE differs from the config's own ropeTheta / ropeScaling. */
export function hasLayerRope(config: DecoderArchConfig): boolean {
  return config.layerRope?.some((r) => r !== null && r !== undefined) ?? false;
}

/** The section as given, once it is known to cover the rotary half exactly. */
function checkedMropeSection(section: readonly [number, number, number], half: number): readonly [number, number, number] {
  if (section.length !== 3 || section.some((n) => !Number.isInteger(n) || n < 0) || section[0] + section[1] + section[2] !== half) {
    throw new Error(`mrope_section [${section.join(', ')}] must be three non-negative integers summing to the rotary half-dimension ${half}`);
  }
  return section;
}
