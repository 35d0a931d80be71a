// A tiny seeded Qwen2.5-VL written as checkpoints ship: a Hugging Face directory
// (Qwen2_5_VLForConditionalGeneration's config.json with vision_config and M-RoPE, model.safetensors
// with the text model under `model.*` / `lm_head` and the tower under `visual.*`,
// preprocessor_config.json, a tokenizer with the vision tokens and a Qwen-style chat template).
// stories260K's 512-piece vocabulary plus <|vision_start|>, <|vision_end|> and <|image_pad|>.
// Reusable by bench scripts: every value depends only on the seed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fill, lazyRandomTensors, llamaConfig, uniformSource } from '../../bench/random-llama';
import { readGgufFile } from '../../src/model/gguf/gguf-file';
import { architectureOf } from '../../src/model/architectures/registry';
import { archMetadata, ggufTokenizerMetadata } from '../../src/model/gguf/write-model';
import { gv, writeGguf, type GgufTensorToWrite, type GgufTypedValue } from '../../src/model/gguf/writer';
import { writeSafetensors } from '../../src/model/hf/safetensors-writer';
import { ggufVocabToTokenizerJson } from '../../src/model/tokenizer';
import type { DecoderArchConfig } from '../../src/model/types';
import { STORIES } from './write-decoder-files';

export const VISION_TOKENS = ['<|vision_start|>', '<|vision_end|>', '<|image_pad|>'] as const;
/** Ids of the vision tokens, after stories260K's 512 pieces. */
export const VISION_START_ID = 512;
export const VISION_END_ID = 513;
export const IMAGE_PAD_ID = 514;

/** The language model: head_dim 16, so 8 rotary half-dims split [2, 3, 3] over (t, h, w). */
export const QWEN_VL_TEXT: DecoderArchConfig = llamaConfig({
  architecture: 'qwen2',
  attentionBias: true,
  hiddenSize: 64,
  intermediateSize: 96,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  vocabSize: 515,
  rmsNormEps: 1e-6,
  ropeTheta: 1000000,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 1024,
  mropeSection: [2, 3, 3],
});

/** vision_config: 3 blocks (the last attends over the whole image), windows of 4 x 4 merged units (112 px). */
export const QWEN_VL_VISION = {
  depth: 3,
  hidden_size: 32,
  hidden_act: 'silu',
  intermediate_size: 48,
  num_heads: 2,
  in_chans: 3,
  out_hidden_size: 64,
  patch_size: 14,
  spatial_merge_size: 2,
  spatial_patch_size: 14,
  temporal_patch_size: 2,
  window_size: 112,
  fullatt_block_indexes: [2],
  tokens_per_second: 2,
};

/** transformers' Qwen2VLImageProcessor settings, with a pixel range that keeps test images small. */
export const QWEN_VL_PREPROCESSOR = {
  image_processor_type: 'Qwen2VLImageProcessor',
  processor_class: 'Qwen2_5_VLProcessor',
  do_resize: true,
  do_rescale: true,
  do_normalize: true,
  do_convert_rgb: true,
  resample: 3,
  rescale_factor: 1 / 255,
  image_mean: [0.48145466, 0.4578275, 0.40821073],
  image_std: [0.26862954, 0.26130258, 0.27577711],
  min_pixels: 3136,
  max_pixels: 65536,
  patch_size: 14,
  temporal_patch_size: 2,
  merge_size: 2,
};

/** Qwen's template shape: ChatML turns, an image part as <|vision_start|><|image_pad|><|vision_end|>. */
export const QWEN_VL_CHAT_TEMPLATE =
  "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}{% else %}" +
  "{% for part in m['content'] %}{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}" +
  '{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';

export interface NamedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

/** The tower's seeded tensors by their Hugging Face names and shapes (the Conv3d 5-D). */
export function qwenVisionTensors(seed: number, vision = QWEN_VL_VISION): NamedTensor[] {
  const next = uniformSource(seed);
  const d = vision.hidden_size;
  const ffn = vision.intermediate_size;
  const merged = d * vision.spatial_merge_size ** 2;
  const out: NamedTensor[] = [];
  const add = (name: string, shape: number[], scale: number, offset = 0) => out.push({ name, shape, data: fill({ name, shape, scale, offset }, next) });
  const linear = (prefix: string, outDim: number, inDim: number) => {
    add(`${prefix}.weight`, [outDim, inDim], 1 / Math.sqrt(inDim));
    add(`${prefix}.bias`, [outDim], 0.1);
  };
  const p = vision.patch_size;
  add('visual.patch_embed.proj.weight', [d, 3, vision.temporal_patch_size, p, p], 1 / Math.sqrt(3 * vision.temporal_patch_size * p * p));
  for (let b = 0; b < vision.depth; b++) {
    const prefix = `visual.blocks.${b}`;
    add(`${prefix}.norm1.weight`, [d], 0.2, 1);
    add(`${prefix}.norm2.weight`, [d], 0.2, 1);
    linear(`${prefix}.attn.qkv`, 3 * d, d);
    linear(`${prefix}.attn.proj`, d, d);
    linear(`${prefix}.mlp.gate_proj`, ffn, d);
    linear(`${prefix}.mlp.up_proj`, ffn, d);
    linear(`${prefix}.mlp.down_proj`, d, ffn);
  }
  add('visual.merger.ln_q.weight', [d], 0.2, 1);
  linear('visual.merger.mlp.0', merged, merged);
  linear('visual.merger.mlp.2', vision.out_hidden_size, merged);
  return out;
}

/** config.json of Qwen2_5_VLForConditionalGeneration (text fields at the top level, as the released checkpoints). */
export function qwenVlConfigJson(text = QWEN_VL_TEXT, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['Qwen2_5_VLForConditionalGeneration'],
    model_type: 'qwen2_5_vl',
    hidden_size: text.hiddenSize,
    intermediate_size: text.intermediateSize,
    num_hidden_layers: text.numLayers,
    num_attention_heads: text.numHeads,
    num_key_value_heads: text.numKvHeads,
    vocab_size: text.vocabSize,
    rms_norm_eps: text.rmsNormEps,
    rope_theta: text.ropeTheta,
    rope_scaling: { type: 'mrope', mrope_section: [...text.mropeSection!] },
    max_position_embeddings: text.maxPositionEmbeddings,
    tie_word_embeddings: text.tieWordEmbeddings,
    hidden_act: 'silu',
    bos_token_id: 1,
    eos_token_id: 2,
    vision_start_token_id: VISION_START_ID,
    vision_end_token_id: VISION_END_ID,
    image_token_id: IMAGE_PAD_ID,
    torch_dtype: 'float32',
    vision_config: QWEN_VL_VISION,
    ...extra,
  };
}

/** stories260K's tokenizer.* GGUF metadata with the vision tokens appended as control tokens. */
export async function qwenVlTokenizerMetadata(): Promise<Record<string, GgufTypedValue>> {
  const meta = ggufTokenizerMetadata(await readGgufFile(STORIES));
  const tokens = meta['tokenizer.ggml.tokens'].value as string[];
  const scores = meta['tokenizer.ggml.scores'].value as number[];
  const types = meta['tokenizer.ggml.token_type'].value as number[];
  return {
    ...meta,
    'tokenizer.ggml.tokens': gv.strings([...tokens, ...VISION_TOKENS]),
    'tokenizer.ggml.scores': gv.f32s([...scores, ...VISION_TOKENS.map(() => 0)]),
    'tokenizer.ggml.token_type': gv.i32s([...types, ...VISION_TOKENS.map(() => 3)]),
    'tokenizer.chat_template': gv.str(QWEN_VL_CHAT_TEMPLATE),
  };
}

/** The language model's seeded tensors (HF names), as the decoder writers draw them. */
export function qwenVlTextTensors(seed: number, text = QWEN_VL_TEXT): NamedTensor[] {
  return lazyRandomTensors(text, seed).map(({ name, shape, values }) => ({ name, shape, data: values() }));
}

/** Writes the Hugging Face directory; `layout: 'nested'` stores the text model under model.language_model.* and the tower under model.visual.* (transformers >= 4.52). */
export async function writeQwenVlHfDir(dir: string, seed: number, opts: { layout?: 'flat' | 'nested' } = {}): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const nested = opts.layout === 'nested';
  const rename = (name: string) => (!nested ? name : name.startsWith('visual.') ? `model.${name}` : name.replace(/^model\./, 'model.language_model.'));
  const tensors = [...qwenVlTextTensors(seed), ...qwenVisionTensors(seed + 1)].map(({ name, shape, data }) => ({ name: rename(name), tensor: { kind: 'f32' as const, shape, data } }));
  writeSafetensors(join(dir, 'model.safetensors'), tensors, 'F32');
  writeFileSync(join(dir, 'config.json'), JSON.stringify(qwenVlConfigJson(), null, 2));
  writeFileSync(join(dir, 'preprocessor_config.json'), JSON.stringify(QWEN_VL_PREPROCESSOR, null, 2));
  const metadata = Object.fromEntries(Object.entries(await qwenVlTokenizerMetadata()).map(([key, typed]) => [key, typed.value]));
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(metadata);
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...tokenizerConfig, chat_template: QWEN_VL_CHAT_TEMPLATE }));
}

export type QwenVisionConfig = typeof QWEN_VL_VISION;

/** Sizes other than the tiny defaults (bench/vision.ts writes the 3B tower's widths). */
export interface QwenVlShape {
  text?: DecoderArchConfig;
  vision?: QwenVisionConfig;
}

export interface QwenVlGgufPaths {
  text: string;
  mmproj: string;
}

/**
 * The same seeded model as llama.cpp's converter writes it: a `qwen2vl` text GGUF (with
 * rope.dimension_sections) and beside it an mmproj GGUF (`qwen2.5vl_merger`: Conv3d split per
 * frame, qkv split, the full-attention blocks as n_wa_pattern), float32 throughout.
 */
export async function writeQwenVlGguf(dir: string, seed: number, shape: QwenVlShape = {}): Promise<QwenVlGgufPaths> {
  mkdirSync(dir, { recursive: true });
  const paths = { text: join(dir, 'qwen2.5-vl-tiny.gguf'), mmproj: join(dir, 'mmproj-qwen2.5-vl-tiny.gguf') };
  const text = shape.text ?? QWEN_VL_TEXT;
  const vision = shape.vision ?? QWEN_VL_VISION;
  const mapping = architectureOf(text).gguf!;
  const textTensors = qwenVlTextTensors(seed, text).map(({ name, shape, data }) => ({ name: mapping.ggufName(name), shape, type: 'f32' as const, data }));
  writeGguf(
    paths.text,
    {
      ...archMetadata({ ...text, architecture: 'qwen2vl' }, 'qwen2.5-vl-tiny', 'f32'),
      'qwen2vl.rope.dimension_sections': gv.i32s([...text.mropeSection!, 0]),
      ...(await qwenVlTokenizerMetadata()),
    },
    textTensors,
  );
  writeGguf(paths.mmproj, qwenVlMmprojMetadata(vision), qwenVlMmprojTensors(seed + 1, vision));
  return paths;
}

function qwenVlMmprojMetadata(vision = QWEN_VL_VISION): Record<string, GgufTypedValue> {
  const full = vision.fullatt_block_indexes;
  return {
    'general.architecture': gv.str('clip'),
    'general.type': gv.str('mmproj'),
    'general.name': gv.str('qwen2.5-vl-tiny'),
    'general.file_type': gv.u32(0),
    'clip.projector_type': gv.str('qwen2.5vl_merger'),
    'clip.has_vision_encoder': gv.bool(true),
    'clip.use_silu': gv.bool(true),
    'clip.vision.projection_dim': gv.u32(vision.out_hidden_size),
    'clip.vision.image_size': gv.u32(560),
    'clip.vision.patch_size': gv.u32(vision.patch_size),
    'clip.vision.embedding_length': gv.u32(vision.hidden_size),
    'clip.vision.feed_forward_length': gv.u32(vision.intermediate_size),
    'clip.vision.block_count': gv.u32(vision.depth),
    'clip.vision.attention.head_count': gv.u32(vision.num_heads),
    'clip.vision.attention.layer_norm_epsilon': gv.f32(1e-6),
    'clip.vision.image_mean': gv.f32s(QWEN_VL_PREPROCESSOR.image_mean),
    'clip.vision.image_std': gv.f32s(QWEN_VL_PREPROCESSOR.image_std),
    // The converter's rule: blocks fullatt_block_indexes[0] + 1 apart attend fully.
    'clip.vision.n_wa_pattern': gv.u32(full[0] + 1),
  };
}

/** The tower's tensors under llama.cpp's mmproj names, split as its converter splits them. */
function qwenVlMmprojTensors(seed: number, vision: QwenVisionConfig): GgufTensorToWrite[] {
  const out: GgufTensorToWrite[] = [];
  const add = (name: string, shape: number[], data: Float32Array) => out.push({ name, shape, type: 'f32', data });
  const blockParts: Record<string, string> = {
    norm1: 'ln1', norm2: 'ln2', 'attn.proj': 'attn_out', 'mlp.gate_proj': 'ffn_gate', 'mlp.up_proj': 'ffn_up', 'mlp.down_proj': 'ffn_down',
  };
  for (const { name, shape, data } of qwenVisionTensors(seed, vision)) {
    if (name === 'visual.patch_embed.proj.weight') {
      const [d, channels, frames, p] = shape;
      const area = p * p;
      for (let t = 0; t < frames; t++) {
        const frame = new Float32Array(d * channels * area);
        for (let oc = 0; oc < d * channels; oc++) frame.set(data.subarray((oc * frames + t) * area, (oc * frames + t + 1) * area), oc * area);
        add(t === 0 ? 'v.patch_embd.weight' : `v.patch_embd.weight.${t}`, [d, channels, p, p], frame);
      }
      continue;
    }
    const block = /^visual\.blocks\.(\d+)\.(.+)\.(weight|bias)$/.exec(name);
    if (block && block[2] === 'attn.qkv') {
      const third = shape[0] / 3;
      const width = data.length / shape[0];
      ['q', 'k', 'v'].forEach((part, i) => add(`v.blk.${block[1]}.attn_${part}.${block[3]}`, [third, ...shape.slice(1)], data.slice(i * third * width, (i + 1) * third * width)));
      continue;
    }
    if (block) {
      add(`v.blk.${block[1]}.${blockParts[block[2]]}.${block[3]}`, shape, data);
      continue;
    }
    const merger: Record<string, string> = { 'visual.merger.ln_q.weight': 'v.post_ln.weight' };
    add(merger[name] ?? name.replace('visual.merger.mlp.', 'mm.'), shape, data);
  }
  return out;
}
