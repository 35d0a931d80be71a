// Gemma 3's tower: SigLIP (patch conv with bias, learned positions, gelu_pytorch_tanh, post_layernorm)
// and Gemma3MultiModalProjector, from config.json's vision_config or a `gemma3` mmproj's clip.* keys.
import type { GgufMetadata } from '../../gguf/gguf-file';
import { SettingsReader } from '../settings-reader';
import type { VitConfig } from './vit-config';

/** transformers' SiglipVisionConfig defaults (gemma-3-4b-it lists its own values). */
const SIGLIP_DEFAULTS = { hidden_size: 768, intermediate_size: 3072, num_hidden_layers: 12, num_attention_heads: 12, image_size: 224, patch_size: 16, layer_norm_eps: 1e-6 };

const SIGLIP = { patchBias: true, classToken: false, preNorm: false, postNorm: true, select: 'all', activation: 'gelu_tanh' } as const;

export function gemma3HfVitConfig(json: Record<string, unknown>, textHiddenSize: number, source: string): VitConfig {
  const vision = new SettingsReader({ ...SIGLIP_DEFAULTS, ...((json.vision_config as Record<string, unknown>) ?? {}) }, `${source}: config.json vision_config`);
  const act = vision.string('hidden_act') ?? 'gelu_pytorch_tanh';
  if (act !== 'gelu_pytorch_tanh') vision.fail('hidden_act', `'${act}' is not SigLIP's gelu_pytorch_tanh`);
  const top = new SettingsReader(json, `${source}: config.json`);
  const layerNormEps = vision.number('layer_norm_eps');
  const config: VitConfig = {
    ...SIGLIP,
    hiddenSize: vision.integer('hidden_size'),
    intermediateSize: vision.integer('intermediate_size'),
    numLayers: vision.integer('num_hidden_layers'),
    numHeads: vision.integer('num_attention_heads'),
    imageSize: vision.integer('image_size'),
    patchSize: vision.integer('patch_size'),
    layerNormEps,
    projector: { kind: 'gemma3', tokensPerImage: top.integer('mm_tokens_per_image', 256), textHiddenSize, normEps: layerNormEps },
  };
  if (vision.integer('num_channels', 3) !== 3) vision.fail('num_channels', 'other than 3 (RGB) is not supported');
  return config;
}

/** From the mmproj's metadata as clip.cpp reads it (projector type already checked). */
export function gemma3GgufVitConfig(metadata: GgufMetadata, source: string): VitConfig {
  const clip = new SettingsReader(metadata, `${source} (mmproj)`);
  if (clip.raw('clip.use_gelu') !== true) clip.fail('clip.use_gelu', "is not true: Gemma 3's SigLIP runs GELU");
  const imageSize = clip.integer('clip.vision.image_size');
  const patchSize = clip.integer('clip.vision.patch_size');
  const pool = clip.integer('clip.vision.projector.scale_factor', 4);
  const layerNormEps = clip.number('clip.vision.attention.layer_norm_epsilon', 1e-6);
  return {
    ...SIGLIP,
    hiddenSize: clip.integer('clip.vision.embedding_length'),
    intermediateSize: clip.integer('clip.vision.feed_forward_length'),
    numLayers: clip.integer('clip.vision.block_count'),
    numHeads: clip.integer('clip.vision.attention.head_count'),
    imageSize,
    patchSize,
    layerNormEps,
    projector: { kind: 'gemma3', tokensPerImage: Math.floor(imageSize / patchSize / pool) ** 2, textHiddenSize: clip.integer('clip.vision.projection_dim'), normEps: layerNormEps },
  };
}
