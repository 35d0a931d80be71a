// Seeded random gemma2 / gemma3 text decoders written as real checkpoints ship: config.json with
// the fields (and omissions) of google/gemma-2-2b-it, gemma-3-1b-it (Gemma3ForCausalLM) and
// gemma-3-4b-it (Gemma3ForConditionalGeneration: text_config, tensors under language_model.model.,
// a vision tower the text server ignores), safetensors with norm gains stored as HF does (w, applied
// as 1 + w), and their GGUF conversions. Small shapes with a sliding window shorter than the test
// prompts. `node dist/bench/random-gemma.js DIR` writes the llama.cpp parity files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf } from '../src/model/gguf/write-model';
import type { GgufWriteType } from '../src/model/gguf/writer';
import { writeSafetensors, type SafetensorsDtype } from '../src/model/hf/safetensors-writer';
import { loadModel } from '../src/model/load-model';
import { ggufVocabToTokenizerJson } from '../src/model/tokenizer';
import type { DecoderArchConfig } from '../src/model/types';
import { uniformSource } from './random-llama';

type Json = Record<string, unknown>;

export type GemmaFamily = 'gemma2' | 'gemma3';

/** A small config.json of `family` (text decoder fields only), with `overrides` applied. */
export function gemmaConfigJson(family: GemmaFamily, overrides: Json = {}): Json {
  const shared = {
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: 1,
    eos_token_id: 2,
    pad_token_id: 0,
    head_dim: 16,
    hidden_activation: 'gelu_pytorch_tanh',
    hidden_size: 64,
    intermediate_size: 128,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    query_pre_attn_scalar: 16,
    rms_norm_eps: 1e-6,
    vocab_size: 512,
    torch_dtype: 'float32',
    use_cache: true,
  };
  if (family === 'gemma2') {
    return {
      architectures: ['Gemma2ForCausalLM'],
      model_type: 'gemma2',
      ...shared,
      hidden_act: 'gelu_pytorch_tanh',
      attn_logit_softcapping: 1.5,
      final_logit_softcapping: 3.0,
      cache_implementation: 'hybrid',
      max_position_embeddings: 256,
      num_hidden_layers: 4,
      rope_theta: 10000.0,
      sliding_window: 5,
      ...overrides,
    };
  }
  return {
    architectures: ['Gemma3ForCausalLM'],
    model_type: 'gemma3_text',
    ...shared,
    attn_logit_softcapping: null,
    final_logit_softcapping: null,
    cache_implementation: 'hybrid',
    max_position_embeddings: 256,
    num_hidden_layers: 7,
    rope_local_base_freq: 10000,
    rope_scaling: { factor: 4.0, rope_type: 'linear' },
    rope_theta: 1000000,
    sliding_window: 5,
    sliding_window_pattern: 6,
    ...overrides,
  };
}

/** Every text-decoder tensor of `json` under its HF name, seeded; norm gains as HF stores them (w around 0). */
export function randomGemmaTensors(json: Json, seed: number): Map<string, Float32Array> {
  const c = json;
  const n = (key: string) => c[key] as number;
  const h = n('hidden_size');
  const hd = n('head_dim');
  const q = n('num_attention_heads') * hd;
  const kv = n('num_key_value_heads') * hd;
  const ffn = n('intermediate_size');
  const next = uniformSource(seed);
  const out = new Map<string, Float32Array>();
  const add = (name: string, size: number, scale: number) => out.set(name, Float32Array.from({ length: size }, () => scale * next()));
  add('model.embed_tokens.weight', n('vocab_size') * h, 1);
  for (let l = 0; l < n('num_hidden_layers'); l++) {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, h, 0.3);
    add(`${p}self_attn.q_proj.weight`, q * h, 1 / Math.sqrt(h));
    add(`${p}self_attn.k_proj.weight`, kv * h, 1 / Math.sqrt(h));
    add(`${p}self_attn.v_proj.weight`, kv * h, 1 / Math.sqrt(h));
    if (c.model_type === 'gemma3_text') {
      add(`${p}self_attn.q_norm.weight`, hd, 0.3);
      add(`${p}self_attn.k_norm.weight`, hd, 0.3);
    }
    add(`${p}self_attn.o_proj.weight`, h * q, 1 / Math.sqrt(q));
    add(`${p}post_attention_layernorm.weight`, h, 0.3);
    add(`${p}pre_feedforward_layernorm.weight`, h, 0.3);
    add(`${p}post_feedforward_layernorm.weight`, h, 0.3);
    add(`${p}mlp.gate_proj.weight`, ffn * h, 1 / Math.sqrt(h));
    add(`${p}mlp.up_proj.weight`, ffn * h, 1 / Math.sqrt(h));
    add(`${p}mlp.down_proj.weight`, h * ffn, 1 / Math.sqrt(ffn));
  }
  add('model.norm.weight', h, 0.3);
  return out;
}

/** The HF shape of a text-decoder tensor of `json` (linears [out, in]). */
function shapeOf(json: Json, name: string, size: number): number[] {
  const h = json.hidden_size as number;
  if (name.endsWith('norm.weight')) return [size];
  if (name.endsWith('o_proj.weight') || name.endsWith('down_proj.weight')) return [h, size / h];
  return [size / h, h];
}

export interface WriteGemmaDirOptions {
  dtype?: SafetensorsDtype;
  /** 'conditional': as Gemma3ForConditionalGeneration ships (text_config, language_model.model.* tensors, a vision tower). */
  layout?: 'causal' | 'conditional';
  /** A GGUF whose vocabulary becomes tokenizer.json (its size must be the config's vocab_size). */
  tokenizerGguf?: string;
}

/** Writes config.json + model.safetensors (+ tokenizer files) of a text config `json` and its tensors. */
export async function writeGemmaHfDir(dir: string, json: Json, tensors: ReadonlyMap<string, Float32Array>, opts: WriteGemmaDirOptions = {}): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const conditional = opts.layout === 'conditional';
  const stored: Array<{ name: string; tensor: { kind: 'f32'; shape: number[]; data: Float32Array } }> = [];
  for (const [name, data] of tensors) {
    stored.push({ name: conditional ? `language_model.${name}` : name, tensor: { kind: 'f32', shape: shapeOf(json, name, data.length), data } });
  }
  if (conditional) {
    // Vision tower and projector tensors a text-only server must skip.
    stored.push({ name: 'vision_tower.vision_model.embeddings.patch_embedding.bias', tensor: { kind: 'f32', shape: [8], data: new Float32Array(8).fill(0.5) } });
    stored.push({ name: 'multi_modal_projector.mm_soft_emb_norm.weight', tensor: { kind: 'f32', shape: [8], data: new Float32Array(8) } });
  }
  writeSafetensors(join(dir, 'model.safetensors'), stored, opts.dtype ?? 'F32');
  writeJson(join(dir, 'config.json'), conditional ? conditionalConfig(json) : json);
  if (opts.tokenizerGguf) {
    const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson((await readGgufFile(opts.tokenizerGguf)).metadata);
    writeJson(join(dir, 'tokenizer.json'), tokenizerJson);
    writeJson(join(dir, 'tokenizer_config.json'), tokenizerConfig);
  }
}

/**
 * gemma-3-4b-it's config.json shape: the text decoder's fields in text_config, which (as there)
 * leaves out every field equal to Gemma3TextConfig's default.
 */
function conditionalConfig(text: Json): Json {
  const defaults: Json = { rms_norm_eps: 1e-6, rope_local_base_freq: 10000, sliding_window_pattern: 6, hidden_activation: 'gelu_pytorch_tanh', attention_bias: false };
  const textConfig = Object.fromEntries(Object.entries(text).filter(([key, value]) => !['architectures', 'torch_dtype', 'bos_token_id', 'eos_token_id', 'pad_token_id'].includes(key) && defaults[key] !== value));
  return {
    architectures: ['Gemma3ForConditionalGeneration'],
    model_type: 'gemma3',
    boi_token_index: 255999,
    eoi_token_index: 256000,
    image_token_index: 262144,
    mm_tokens_per_image: 256,
    bos_token_id: text.bos_token_id,
    eos_token_id: text.eos_token_id,
    pad_token_id: text.pad_token_id,
    torch_dtype: text.torch_dtype,
    text_config: textConfig,
    vision_config: { model_type: 'siglip_vision_model', hidden_size: 8, image_size: 896, patch_size: 14, num_hidden_layers: 1 },
  };
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2));
}

/**
 * The GGUF conversion of the HF directory `dir`, as llama.cpp's converter makes it: the loaded
 * (canonical) weights and config through the project's writer, with `tokenizerGguf`'s vocabulary.
 */
export async function writeGemmaGguf(dir: string, path: string, tokenizerGguf: string, type: GgufWriteType = 'f32'): Promise<void> {
  const model = await loadModel({ model: dir, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
  const weights = model.weights!;
  const tensors = weights.names().map((name) => {
    const t = weights.get(name);
    if (t.kind !== 'f32') throw new Error(`${name} is not float32`);
    return { name, shape: t.shape, values: () => t.data };
  });
  const tokenizer = ggufTokenizerMetadata(await readGgufFile(tokenizerGguf));
  writeModelGguf(path, model.config as DecoderArchConfig, tensors, tokenizer, type, `random-${model.config.architecture}`);
}

/** The parity set: each family with a window shorter than the prompts, as HF directories and F32 / Q8_0 GGUFs. */
export const PARITY_MODELS: ReadonlyArray<{ name: string; json: Json }> = [
  { name: 'gemma3', json: gemmaConfigJson('gemma3') },
  { name: 'gemma3-softcap', json: gemmaConfigJson('gemma3', { final_logit_softcapping: 4.0, sliding_window: 8 }) },
  { name: 'gemma2', json: gemmaConfigJson('gemma2') },
];

/** `node dist/bench/random-gemma.js [DIR]`: writes the parity models (stories260K's vocabulary) and prints the GGUF paths. */
if (require.main === module) {
  const root = join(__dirname, '..', '..');
  const out = resolve(process.argv[2] ?? join(root, '.bench-cache', 'gemma'));
  const stories = join(root, '..', 'shared', 'models', 'stories260K.gguf');
  (async () => {
    for (const [i, { name, json }] of PARITY_MODELS.entries()) {
      const dir = join(out, name);
      await writeGemmaHfDir(dir, json, randomGemmaTensors(json, 100 + i), { tokenizerGguf: stories });
      for (const type of ['f32', 'q8_0'] as const) {
        await writeGemmaGguf(dir, join(out, `${name}-${type}.gguf`), stories, type);
        console.log(join(out, `${name}-${type}.gguf`));
      }
    }
  })().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
