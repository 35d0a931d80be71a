// LLaVA-1.5's tower: CLIP ViT (class token, pre_layrnorm, quick_gelu, no post-norm on the
// features) cut at vision_feature_layer, and LlavaMultiModalProjector, from config.json or an
// `mlp` mmproj. llama.cpp's converter keeps only the layers up to the feature layer and writes
// block_count = that depth with clip.vision.feature_layer; without feature_layer, clip.cpp runs
// block_count - 1 layers (the second-to-last hidden state of what the file holds).
import type { GgufMetadata } from '../../gguf/gguf-file';
import { SettingsReader } from '../settings-reader';
import type { VitConfig } from './vit-config';

/** transformers' CLIPVisionConfig defaults as LlavaConfig builds them (CLIP ViT-L/14-336 but 336 px). */
const CLIP_DEFAULTS = { hidden_size: 1024, intermediate_size: 4096, num_hidden_layers: 24, num_attention_heads: 16, image_size: 336, patch_size: 14, layer_norm_eps: 1e-5 };

const CLIP = { patchBias: false, classToken: true, preNorm: true, activation: 'quick_gelu' } as const;

/** Layers to run for HF's hidden_states[index]: index 0 is the embeddings, negative counts from the end. */
function featureDepth(index: number, layers: number, settings: SettingsReader): number {
  const depth = index < 0 ? layers + index + 1 : index;
  if (depth < 1 || depth > layers) settings.fail('vision_feature_layer', `${index} is outside the tower's ${layers} layers`);
  return depth;
}

export function llavaHfVitConfig(json: Record<string, unknown>, textHiddenSize: number, source: string): VitConfig {
  const top = new SettingsReader(json, `${source}: config.json`);
  const vision = new SettingsReader({ ...CLIP_DEFAULTS, ...((json.vision_config as Record<string, unknown>) ?? {}) }, `${source}: config.json vision_config`);
  const visionType = vision.string('model_type') ?? 'clip_vision_model';
  if (visionType !== 'clip_vision_model') vision.fail('model_type', `'${visionType}' is not supported for LLaVA (clip_vision_model)`);
  const act = vision.string('hidden_act') ?? 'quick_gelu';
  if (act !== 'quick_gelu') vision.fail('hidden_act', `'${act}' is not supported for LLaVA's CLIP tower (quick_gelu)`);
  if (vision.integer('num_channels', 3) !== 3) vision.fail('num_channels', 'other than 3 (RGB) is not supported');
  const projectorAct = top.string('projector_hidden_act') ?? 'gelu';
  if (projectorAct !== 'gelu') top.fail('projector_hidden_act', `'${projectorAct}' is not supported (gelu)`);
  if (top.raw('multimodal_projector_bias') === false) top.fail('multimodal_projector_bias', 'false is not supported');
  const layer = top.raw('vision_feature_layer') ?? -2;
  if (typeof layer !== 'number' || !Number.isInteger(layer)) return top.fail('vision_feature_layer', `${JSON.stringify(layer)} is not supported: one layer index only`);
  const strategy = top.string('vision_feature_select_strategy') ?? 'default';
  if (strategy !== 'default' && strategy !== 'full') top.fail('vision_feature_select_strategy', `must be 'default' or 'full', got '${strategy}'`);
  const layers = vision.integer('num_hidden_layers');
  return {
    ...CLIP,
    hiddenSize: vision.integer('hidden_size'),
    intermediateSize: vision.integer('intermediate_size'),
    numLayers: featureDepth(layer, layers, top),
    numHeads: vision.integer('num_attention_heads'),
    imageSize: vision.integer('image_size'),
    patchSize: vision.integer('patch_size'),
    layerNormEps: vision.number('layer_norm_eps'),
    postNorm: false,
    select: strategy === 'full' ? 'all' : 'patches',
    projector: { kind: 'mlp', textHiddenSize },
  };
}

/**
 * `tensors`: the mmproj's tensors by name, GGML shapes (the class token and the norms are there or
 * not; the text width is mm.2's rows, as the legacy converter's projection_dim is CLIP's own).
 */
export function llavaGgufVitConfig(metadata: GgufMetadata, tensors: ReadonlyMap<string, number[]>, source: string): VitConfig {
  const clip = new SettingsReader(metadata, `${source} (mmproj)`);
  if (clip.raw('clip.use_gelu') === true) clip.fail('clip.use_gelu', "is true: LLaVA's CLIP tower runs quick_gelu");
  if (!tensors.has('v.class_embd')) clip.fail('v.class_embd', 'is missing: a LLaVA mmproj has a class token');
  const blocks = clip.integer('clip.vision.block_count');
  const featureLayers = clip.raw('clip.vision.feature_layer');
  let depth = blocks - 1;
  if (featureLayers !== undefined) {
    const list = Array.isArray(featureLayers) ? featureLayers.map(Number) : [];
    if (list.length !== 1) clip.fail('clip.vision.feature_layer', `${JSON.stringify(featureLayers)} is not supported: one feature layer only (stacked layers are Granite's)`);
    depth = list[0];
    if (!Number.isInteger(depth) || depth < 1 || depth > blocks) clip.fail('clip.vision.feature_layer', `${depth} is outside the file's ${blocks} layers`);
  }
  const textHiddenSize = tensors.get('mm.2.weight')?.[1];
  if (textHiddenSize === undefined) return clip.fail('mm.2.weight', "is missing: an mlp projector's second linear");
  return {
    ...CLIP,
    hiddenSize: clip.integer('clip.vision.embedding_length'),
    intermediateSize: clip.integer('clip.vision.feed_forward_length'),
    numLayers: depth,
    numHeads: clip.integer('clip.vision.attention.head_count'),
    imageSize: clip.integer('clip.vision.image_size'),
    patchSize: clip.integer('clip.vision.patch_size'),
    layerNormEps: clip.number('clip.vision.attention.layer_norm_epsilon', 1e-5),
    preNorm: tensors.has('v.pre_ln.weight'),
    postNorm: tensors.has('v.post_ln.weight'),
    select: 'patches',
    projector: { kind: 'mlp', textHiddenSize },
  };
}
