// Seeded random vision-language models written as real checkpoints ship, small enough for unit
// tests: a Gemma 3 (SigLIP + Gemma3MultiModalProjector, gemma3 text) and a LLaVA-1.5 (CLIP ViT +
// MLP projector, llama text), each as a Hugging Face directory (config.json, preprocessor and
// processor configs, model.safetensors, tokenizer with the image tokens and a chat template that
// renders image parts) and as a GGUF text model with an mmproj GGUF beside it (llama.cpp's names
// and clip.* keys; LLaVA's as llama.cpp's converter writes it: layers past the feature layer
// dropped, clip.vision.feature_layer set). The vocabulary is stories260K's plus the image tokens.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GGUFValueType } from '@huggingface/gguf';
import { gemmaConfigJson, randomGemmaTensors } from '../../bench/random-gemma';
import { lazyRandomTensors, llamaConfig, uniformSource } from '../../bench/random-llama';
import { readGgufFile } from '../../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf } from '../../src/model/gguf/write-model';
import { gv, writeGguf, type GgufTensorToWrite, type GgufTypedValue } from '../../src/model/gguf/writer';
import { writeSafetensors } from '../../src/model/hf/safetensors-writer';
import { loadModel } from '../../src/model/load-model';
import { ggufVocabToTokenizerJson } from '../../src/model/tokenizer';
import type { DecoderArchConfig } from '../../src/model/types';
import { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD } from '../../src/model/vision/processor-config';
import { loadOptions, sharedModel } from './model-files';

type Json = Record<string, unknown>;
export type VisionFamilyName = 'gemma3' | 'llava' | 'llava_next';

/** Tensors by Hugging Face name (the older transformers layout), with their shapes. */
export type HfTensors = Map<string, { shape: number[]; data: Float32Array }>;

export const STORIES = sharedModel('stories260K.gguf');
const STORIES_VOCAB = 512;

/** The image tokens each family's tokenizer adds after stories260K's 512 pieces. */
export const IMAGE_TOKENS: Record<VisionFamilyName, readonly string[]> = {
  gemma3: ['<start_of_image>', '<image_soft_token>', '<end_of_image>'],
  llava: ['<image>'],
  llava_next: ['<image>'],
};

/** LLaVA-NeXT's grid resolutions (height, width) for its 56-pixel tiles: llava-v1.6's 336-pixel set scaled down. */
export const TINY_PINPOINTS = [[56, 112], [112, 56], [112, 112], [168, 56], [56, 168]];

/** The chat template both formats carry: an image part prints `image` (the family's placeholder token). */
export const IMAGE_PARTS_TEMPLATE = (image: string) =>
  "{% for m in messages %}{{ m['role'] }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}" +
  `{% for p in m['content'] %}{% if p['type'] == 'image' %}${image}{% else %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}\n` +
  '{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}';

/** Keys over the family's tiny vision_config and text_config (bench/vision.ts writes towers at real sizes). */
export interface VisionModelShape {
  vision?: Json;
  text?: Json;
}

/** config.json of the whole model (`overrides` go over its top level, `shape` inside its two sub-configs). */
export function visionConfigJson(family: VisionFamilyName, overrides: Json = {}, shape: VisionModelShape = {}): Json {
  const json = familyConfigJson(family, overrides);
  return {
    ...json,
    text_config: { ...(json.text_config as Json), ...shape.text },
    vision_config: { ...(json.vision_config as Json), ...shape.vision },
  };
}

function familyConfigJson(family: VisionFamilyName, overrides: Json): Json {
  const vocab = STORIES_VOCAB + IMAGE_TOKENS[family].length;
  if (family === 'gemma3') {
    const { architectures: _a, model_type: _m, torch_dtype: _t, ...text } = gemmaConfigJson('gemma3', { vocab_size: vocab, num_hidden_layers: 2 });
    return {
      architectures: ['Gemma3ForConditionalGeneration'],
      model_type: 'gemma3',
      boi_token_index: 512,
      image_token_index: 513,
      eoi_token_index: 514,
      mm_tokens_per_image: 16,
      torch_dtype: 'float32',
      text_config: { ...text, model_type: 'gemma3_text' },
      vision_config: {
        model_type: 'siglip_vision_model', hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2, num_attention_heads: 2,
        image_size: 224, patch_size: 14, layer_norm_eps: 1e-6, vision_use_head: false,
      },
      ...overrides,
    };
  }
  const next = family === 'llava_next';
  return {
    architectures: [next ? 'LlavaNextForConditionalGeneration' : 'LlavaForConditionalGeneration'],
    model_type: family,
    ...(next ? { image_grid_pinpoints: TINY_PINPOINTS } : {}),
    image_token_index: 512,
    projector_hidden_act: 'gelu',
    vision_feature_layer: -2,
    vision_feature_select_strategy: 'default',
    torch_dtype: 'float32',
    text_config: {
      model_type: 'llama', hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
      max_position_embeddings: 512, rms_norm_eps: 1e-5, vocab_size: vocab,
    },
    vision_config: {
      model_type: 'clip_vision_model', hidden_size: 32, intermediate_size: 64, num_hidden_layers: 3, num_attention_heads: 2,
      image_size: 56, patch_size: 14, projection_dim: 16, hidden_act: 'quick_gelu', layer_norm_eps: 1e-5,
    },
    ...overrides,
  };
}

function preprocessorJson(family: VisionFamilyName, json: Json): { preprocessor: Json; processor: Json } {
  const vision = json.vision_config as Json;
  const side = vision.image_size as number;
  if (family === 'gemma3') {
    return {
      preprocessor: {
        image_processor_type: 'Gemma3ImageProcessor', processor_class: 'Gemma3Processor', do_resize: true, size: { height: side, width: side },
        resample: 2, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5],
        do_convert_rgb: null, do_pan_and_scan: null, image_seq_length: json.mm_tokens_per_image,
      },
      processor: { image_seq_length: json.mm_tokens_per_image, processor_class: 'Gemma3Processor' },
    };
  }
  if (family === 'llava_next') {
    return {
      preprocessor: {
        image_processor_type: 'LlavaNextImageProcessor', processor_class: 'LlavaNextProcessor', aspect_ratio_setting: 'anyres', do_resize: true,
        size: { shortest_edge: side }, do_center_crop: true, crop_size: { height: side, width: side }, image_grid_pinpoints: json.image_grid_pinpoints,
        resample: 3, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: OPENAI_CLIP_MEAN, image_std: OPENAI_CLIP_STD,
        do_pad: true, do_convert_rgb: true,
      },
      processor: { patch_size: vision.patch_size, vision_feature_select_strategy: json.vision_feature_select_strategy, num_additional_image_tokens: 1, processor_class: 'LlavaNextProcessor' },
    };
  }
  return {
    preprocessor: {
      image_processor_type: 'CLIPImageProcessor', processor_class: 'LlavaProcessor', do_resize: true, size: { shortest_edge: side },
      do_center_crop: true, crop_size: { height: side, width: side }, resample: 3, do_rescale: true, rescale_factor: 1 / 255,
      do_normalize: true, image_mean: OPENAI_CLIP_MEAN, image_std: OPENAI_CLIP_STD, do_convert_rgb: true,
    },
    processor: { patch_size: vision.patch_size, vision_feature_select_strategy: json.vision_feature_select_strategy, num_additional_image_tokens: 1, processor_class: 'LlavaProcessor' },
  };
}

/** The tower's and projector's tensors as Hugging Face stores them (Gemma's soft-embedding norm as w, applied as 1 + w). */
export function randomVisionTensors(family: VisionFamilyName, json: Json, seed: number): HfTensors {
  const v = json.vision_config as Json;
  const d = v.hidden_size as number;
  const ff = v.intermediate_size as number;
  const p = v.patch_size as number;
  const side = (v.image_size as number) / p;
  const text = (json.text_config as Json).hidden_size as number;
  const clip = family !== 'gemma3';
  const next = uniformSource(seed);
  const out: HfTensors = new Map();
  const add = (name: string, shape: number[], scale: number, offset = 0) =>
    out.set(name, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => offset + scale * next()) });
  const tower = 'vision_tower.vision_model.';
  const norm = (name: string) => {
    add(`${name}.weight`, [d], 0.2, 1);
    add(`${name}.bias`, [d], 0.1);
  };
  const linear = (name: string, outDim: number, inDim: number) => {
    add(`${name}.weight`, [outDim, inDim], 1 / Math.sqrt(inDim));
    add(`${name}.bias`, [outDim], 0.1);
  };
  add(`${tower}embeddings.patch_embedding.weight`, [d, 3, p, p], 1 / Math.sqrt(3 * p * p));
  if (!clip) add(`${tower}embeddings.patch_embedding.bias`, [d], 0.1);
  if (clip) add(`${tower}embeddings.class_embedding`, [d], 0.5);
  add(`${tower}embeddings.position_embedding.weight`, [side * side + (clip ? 1 : 0), d], 0.5);
  if (clip) norm(`${tower}pre_layrnorm`);
  for (let l = 0; l < (v.num_hidden_layers as number); l++) {
    const layer = `${tower}encoder.layers.${l}.`;
    norm(`${layer}layer_norm1`);
    for (const proj of ['k_proj', 'v_proj', 'q_proj', 'out_proj']) linear(`${layer}self_attn.${proj}`, d, d);
    norm(`${layer}layer_norm2`);
    linear(`${layer}mlp.fc1`, ff, d);
    linear(`${layer}mlp.fc2`, d, ff);
  }
  // CLIP has a post_layernorm too, which LLaVA's features never pass through.
  norm(`${tower}post_layernorm`);
  if (clip) {
    linear('multi_modal_projector.linear_1', text, d);
    linear('multi_modal_projector.linear_2', text, text);
  } else {
    add('multi_modal_projector.mm_input_projection_weight', [d, text], 1 / Math.sqrt(d));
    add('multi_modal_projector.mm_soft_emb_norm.weight', [d], 0.3);
  }
  // transformers initialises it as randn / sqrt(text hidden).
  if (family === 'llava_next') add('image_newline', [text], 1 / Math.sqrt(text));
  return out;
}

/** The text decoder's tensors under canonical names (model.*, lm_head.weight). */
export function randomTextTensors(family: VisionFamilyName, json: Json, seed: number): HfTensors {
  const text = json.text_config as Json;
  const out: HfTensors = new Map();
  if (family === 'gemma3') {
    const h = text.hidden_size as number;
    for (const [name, data] of randomGemmaTensors(text, seed)) {
      const shape = name.endsWith('norm.weight') ? [data.length] : name.endsWith('o_proj.weight') || name.endsWith('down_proj.weight') ? [h, data.length / h] : [data.length / h, h];
      out.set(name, { shape, data });
    }
    return out;
  }
  const config = llamaTextConfig(text);
  for (const t of lazyRandomTensors(config, seed)) out.set(t.name, { shape: t.shape, data: t.values() });
  return out;
}

function llamaTextConfig(text: Json): DecoderArchConfig {
  const n = (key: string) => text[key] as number;
  return llamaConfig({
    hiddenSize: n('hidden_size'), intermediateSize: n('intermediate_size'), numLayers: n('num_hidden_layers'), numHeads: n('num_attention_heads'),
    numKvHeads: n('num_key_value_heads'), vocabSize: n('vocab_size'), rmsNormEps: n('rms_norm_eps'), maxPositionEmbeddings: n('max_position_embeddings'),
    tieWordEmbeddings: false,
  });
}

/** stories260K's vocabulary with `extra` control tokens appended: GGUF tokenizer.* keys, typed. */
async function extendedVocabulary(extra: readonly string[]): Promise<Record<string, GgufTypedValue>> {
  const typed = ggufTokenizerMetadata(await readGgufFile(STORIES));
  const tokens = [...(typed['tokenizer.ggml.tokens'].value as string[]), ...extra];
  const scores = [...(typed['tokenizer.ggml.scores'].value as number[]), ...extra.map(() => 0)];
  const types = [...(typed['tokenizer.ggml.token_type'].value as number[]), ...extra.map(() => 3)];
  return {
    ...typed,
    'tokenizer.ggml.tokens': gv.strings(tokens),
    'tokenizer.ggml.scores': gv.f32s(scores),
    'tokenizer.ggml.token_type': { type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value: types },
  };
}

export interface WriteVisionOptions {
  /** 'newer': transformers >= 4.52's names (model.language_model.*, model.vision_tower.*, lm_head.weight). */
  layout?: 'older' | 'newer';
  seed?: number;
  /** Top-level config.json keys over the family's (the tensors and processor files follow them). */
  configOverrides?: Json;
  /** processor_config.json keys over the ones that match config.json (mismatch tests). */
  processorOverrides?: Json;
  /** Tower and text sizes over the tiny defaults. */
  shape?: VisionModelShape;
}

export interface WrittenVisionModel {
  json: Json;
  vision: HfTensors;
  text: HfTensors;
}

/** Writes the HF directory of a tiny `family` model; returns its config and tensors (HF names, as stored in the older layout). */
export async function writeVisionHfDir(family: VisionFamilyName, dir: string, opts: WriteVisionOptions = {}): Promise<WrittenVisionModel> {
  mkdirSync(dir, { recursive: true });
  const json = visionConfigJson(family, opts.configOverrides, opts.shape);
  const seed = opts.seed ?? 5;
  const vision = randomVisionTensors(family, json, seed);
  const text = randomTextTensors(family, json, seed + 1);
  const newer = opts.layout === 'newer';
  const stored: Array<{ name: string; tensor: { kind: 'f32'; shape: number[]; data: Float32Array } }> = [];
  for (const [name, t] of vision) stored.push({ name: newer ? `model.${name}` : name, tensor: { kind: 'f32', ...t } });
  for (const [name, t] of text) {
    const storedName = name === 'lm_head.weight' ? (newer ? name : 'language_model.lm_head.weight') : `${newer ? 'model.language_model.' : 'language_model.model.'}${name.slice('model.'.length)}`;
    stored.push({ name: storedName, tensor: { kind: 'f32', ...t } });
  }
  writeSafetensors(join(dir, 'model.safetensors'), stored, 'F32');
  writeJson(join(dir, 'config.json'), json);
  const { preprocessor, processor } = preprocessorJson(family, json);
  writeJson(join(dir, 'preprocessor_config.json'), preprocessor);
  writeJson(join(dir, 'processor_config.json'), { ...processor, ...opts.processorOverrides });
  const vocabulary = await extendedVocabulary(IMAGE_TOKENS[family]);
  const plain = Object.fromEntries(Object.entries(vocabulary).map(([k, v]) => [k, v.value]));
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(plain);
  writeJson(join(dir, 'tokenizer.json'), tokenizerJson);
  writeJson(join(dir, 'tokenizer_config.json'), { ...tokenizerConfig, chat_template: IMAGE_PARTS_TEMPLATE(IMAGE_TOKENS[family][0]) });
  return { json, vision, text };
}

/** llama.cpp's mmproj names of a Hugging Face tower tensor (convert_hf_to_gguf.py / the legacy LLaVA converter). */
function mmprojName(name: string): string {
  const globalNames: Record<string, string> = {
    'embeddings.patch_embedding.weight': 'v.patch_embd.weight',
    'embeddings.patch_embedding.bias': 'v.patch_embd.bias',
    'embeddings.position_embedding.weight': 'v.position_embd.weight',
    'embeddings.class_embedding': 'v.class_embd',
    'pre_layrnorm.weight': 'v.pre_ln.weight',
    'pre_layrnorm.bias': 'v.pre_ln.bias',
    'post_layernorm.weight': 'v.post_ln.weight',
    'post_layernorm.bias': 'v.post_ln.bias',
  };
  const projector: Record<string, string> = {
    'multi_modal_projector.mm_input_projection_weight': 'mm.input_projection.weight',
    'multi_modal_projector.mm_soft_emb_norm.weight': 'mm.soft_emb_norm.weight',
    'multi_modal_projector.linear_1.weight': 'mm.0.weight',
    'multi_modal_projector.linear_1.bias': 'mm.0.bias',
    'multi_modal_projector.linear_2.weight': 'mm.2.weight',
    'multi_modal_projector.linear_2.bias': 'mm.2.bias',
  };
  if (projector[name]) return projector[name];
  // The legacy LLaVA-1.6 converter's name (clip.cpp would look for v.image_newline).
  if (name === 'image_newline') return 'model.image_newline';
  const local = name.slice('vision_tower.vision_model.'.length);
  if (globalNames[local]) return globalNames[local];
  const layer = /^encoder\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(local)!;
  const parts: Record<string, string> = {
    layer_norm1: 'ln1', layer_norm2: 'ln2', 'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v',
    'self_attn.out_proj': 'attn_out', 'mlp.fc1': 'ffn_up', 'mlp.fc2': 'ffn_down',
  };
  return `v.blk.${layer[1]}.${parts[layer[2]]}.${layer[3]}`;
}

export interface MmprojOptions {
  /** Metadata keys over the converter's (null: left out). */
  metadata?: Record<string, GgufTypedValue | null>;
  /** GGUF tensor names left out. */
  drop?: readonly string[];
  /**
   * As llama.cpp's legacy LLaVA converter wrote files before feature_layer: every layer kept,
   * block_count the whole depth, no clip.vision.feature_layer, fc1 named ffn_down and fc2 ffn_up.
   */
  legacy?: boolean;
  /** Storage of the matrices and the patch kernel (llama.cpp's converters write F16); vectors stay F32. */
  matrixType?: 'f32' | 'f16';
}

/** The mmproj GGUF of the HF tower tensors `vision`, as llama.cpp's converters write it for `family`. */
export function writeMmproj(family: VisionFamilyName, json: Json, vision: HfTensors, path: string, opts: MmprojOptions = {}): void {
  const v = json.vision_config as Json;
  const clip = family !== 'gemma3';
  const layers = v.num_hidden_layers as number;
  const featureLayer = json.vision_feature_layer as number;
  // The converter keeps the layers up to the feature layer (hidden_states index) and no post-norm.
  const depth = clip && !opts.legacy ? (featureLayer < 0 ? layers + featureLayer + 1 : featureLayer) : layers;
  const { preprocessor } = preprocessorJson(family, json);
  const metadata: Record<string, GgufTypedValue> = {
    'general.architecture': gv.str('clip'),
    'clip.projector_type': gv.str(clip ? 'mlp' : 'gemma3'),
    'clip.has_vision_encoder': gv.bool(true),
    'clip.has_text_encoder': gv.bool(false),
    ...(clip ? { 'clip.has_llava_projector': gv.bool(true) } : {}),
    ...(clip && !opts.legacy ? { 'clip.vision.feature_layer': gv.i32s([depth]) } : {}),
    'clip.use_gelu': gv.bool(!clip),
    'clip.vision.image_size': gv.u32(v.image_size as number),
    'clip.vision.patch_size': gv.u32(v.patch_size as number),
    'clip.vision.embedding_length': gv.u32(v.hidden_size as number),
    'clip.vision.feed_forward_length': gv.u32(v.intermediate_size as number),
    'clip.vision.projection_dim': gv.u32(clip ? (v.projection_dim as number) : ((json.text_config as Json).hidden_size as number)),
    'clip.vision.attention.head_count': gv.u32(v.num_attention_heads as number),
    'clip.vision.attention.layer_norm_epsilon': gv.f32(v.layer_norm_eps as number),
    'clip.vision.block_count': gv.u32(depth),
    'clip.vision.image_mean': gv.f32s(preprocessor.image_mean as number[]),
    'clip.vision.image_std': gv.f32s(preprocessor.image_std as number[]),
  };
  if (family === 'llava_next') {
    // As the legacy converter writes LLaVA-1.6: transformers' (height, width) pairs flattened.
    metadata['clip.vision.image_grid_pinpoints'] = gv.i32s((json.image_grid_pinpoints as number[][]).flat());
    metadata['clip.vision.mm_patch_merge_type'] = gv.str('spatial_unpad');
    metadata['clip.vision.image_crop_resolution'] = gv.u32(v.image_size as number);
  }
  if (!clip) {
    const pool = (v.image_size as number) / (v.patch_size as number) / Math.sqrt(json.mm_tokens_per_image as number);
    if (pool !== 4) metadata['clip.vision.projector.scale_factor'] = gv.u32(pool);
  }
  for (const [key, value] of Object.entries(opts.metadata ?? {})) {
    if (value === null) delete metadata[key];
    else metadata[key] = value;
  }
  const tensors: GgufTensorToWrite[] = [];
  for (const [name, t] of vision) {
    const layer = /encoder\.layers\.(\d+)\./.exec(name);
    if ((layer && Number(layer[1]) >= depth) || (clip && name.includes('post_layernorm'))) continue;
    const data = name.endsWith('mm_soft_emb_norm.weight') ? t.data.map((x) => x + 1) : t.data;
    let ggufName = mmprojName(name);
    if (opts.legacy) ggufName = ggufName.replace(/ffn_(up|down)/, (_, part: string) => (part === 'up' ? 'ffn_down' : 'ffn_up'));
    if (opts.drop?.includes(ggufName)) continue;
    // F32 by default, so the pair holds exactly the HF directory's values (llama.cpp loads F32 mmproj files).
    // The converters keep the position embedding F32 whatever the file type (ggml's add takes no F16 there).
    const matrix = t.shape.length > 1 && ggufName !== 'v.position_embd.weight';
    tensors.push({ name: ggufName, shape: t.shape, type: matrix ? (opts.matrixType ?? 'f32') : 'f32', data });
  }
  writeGguf(path, metadata, tensors);
}

/** The GGUF pair of an HF directory written by writeVisionHfDir: `<dir>/model.gguf` and `<dir>/mmproj-model.gguf`. */
export async function writeVisionGguf(family: VisionFamilyName, hfDir: string, outDir: string, written: WrittenVisionModel, mmproj: MmprojOptions = {}): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  const model = await loadModel(loadOptions(hfDir));
  const weights = model.weights!;
  const tensors = weights.names().map((name) => {
    const t = weights.get(name);
    if (t.kind !== 'f32') throw new Error(`${name} is not float32`);
    return { name, shape: t.shape, values: () => t.data };
  });
  const vocabulary = await extendedVocabulary(IMAGE_TOKENS[family]);
  const path = join(outDir, 'model.gguf');
  writeModelGguf(path, model.config as DecoderArchConfig, tensors, { ...vocabulary, 'tokenizer.chat_template': gv.str(IMAGE_PARTS_TEMPLATE(IMAGE_TOKENS[family][0])) }, 'f32', `tiny-${family}-vlm`);
  writeMmproj(family, written.json, written.vision, join(outDir, 'mmproj-model.gguf'), mmproj);
  return path;
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2));
}
