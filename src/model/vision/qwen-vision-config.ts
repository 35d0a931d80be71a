// The shape of Qwen2.5-VL's vision tower (transformers' Qwen2_5_VLVisionConfig), whichever file it
// came from: config.json's vision_config, or a llama.cpp mmproj's clip.vision.* keys.

export interface QwenVisionConfig {
  /** Transformer blocks (depth). */
  depth: number;
  /** The ViT's width (hidden_size, embed_dim). */
  hiddenSize: number;
  numHeads: number;
  /** The SiLU-gated MLP's width. */
  intermediateSize: number;
  /** The merger's output: the language model's hidden size (out_hidden_size). */
  outHiddenSize: number;
  patchSize: number;
  temporalPatchSize: number;
  spatialMergeSize: number;
  /** Window side in pixels (112): windows of (windowSize / patchSize / spatialMergeSize)^2 merged units. */
  windowSize: number;
  /** Blocks that attend over the whole image; the rest attend within their window. */
  fullAttentionBlocks: readonly number[];
  /** The RMSNorms' epsilon (transformers fixes 1e-6; llama.cpp's clip.vision.attention.layer_norm_epsilon). */
  normEps: number;
}

/** Merged units per window side (transformers' vit_merger_window_size). */
export function windowUnits(config: QwenVisionConfig): number {
  return Math.floor(Math.floor(config.windowSize / config.spatialMergeSize) / config.patchSize);
}

/** Values of a patch row: 3 channels x temporal frames x patch x patch (the Conv3d's kernel). */
export function patchColumns(config: QwenVisionConfig): number {
  return 3 * config.temporalPatchSize * config.patchSize * config.patchSize;
}

type Json = Record<string, unknown>;

/** From config.json's vision_config (Qwen2_5_VLVisionConfig; refuses the settings this tower does not compute). */
export function qwenVisionConfigFromHf(vision: Json, outHiddenSize: number | undefined, source: string): QwenVisionConfig {
  const int = (key: string, fallback?: number): number => {
    const value = vision[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw new Error(`${source}: vision_config.${key} must be a positive integer, got ${JSON.stringify(vision[key])}`);
    return value;
  };
  const act = vision.hidden_act ?? 'silu';
  if (act !== 'silu') throw new Error(`${source}: vision_config.hidden_act ${JSON.stringify(act)} is not supported (Qwen2.5-VL's tower is SiLU-gated)`);
  const channels = vision.in_channels ?? vision.in_chans ?? 3;
  if (channels !== 3) throw new Error(`${source}: vision_config.in_channels must be 3, got ${JSON.stringify(channels)}`);
  const depth = int('depth');
  const full = vision.fullatt_block_indexes;
  if (!Array.isArray(full) || !full.every((i) => Number.isInteger(i) && i >= 0 && i < depth)) {
    throw new Error(`${source}: vision_config.fullatt_block_indexes must list block indexes below depth ${depth}`);
  }
  const config: QwenVisionConfig = {
    depth,
    hiddenSize: int('hidden_size'),
    numHeads: int('num_heads'),
    intermediateSize: int('intermediate_size'),
    outHiddenSize: int('out_hidden_size', outHiddenSize),
    patchSize: int('patch_size', 14),
    temporalPatchSize: int('temporal_patch_size', 2),
    spatialMergeSize: int('spatial_merge_size', 2),
    windowSize: int('window_size', 112),
    fullAttentionBlocks: full as number[],
    normEps: 1e-6,
  };
  checkQwenVisionConfig(config, source);
  return config;
}

export function checkQwenVisionConfig(config: QwenVisionConfig, source: string): void {
  const headDim = config.hiddenSize / config.numHeads;
  // The 2-D rotary splits each head's half into an h and a w quarter.
  if (!Number.isInteger(headDim) || headDim % 4 !== 0) throw new Error(`${source}: the vision tower's head dim ${headDim} must be a multiple of 4`);
  if (windowUnits(config) < 1) throw new Error(`${source}: window_size ${config.windowSize} is smaller than one merged unit`);
}
