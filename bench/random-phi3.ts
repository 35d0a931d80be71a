// Seeded random Phi-3-family models in the layouts they ship in: a Hugging Face directory
// (config.json as Phi-4-mini's, fused qkv_proj / gate_up_proj in model.safetensors) and its GGUF
// conversion as llama.cpp's convert_hf_to_gguf.py (Phi3MiniModel) writes it: attn_qkv, ffn_up of
// [gate; up], rope.dimension_count = int(partial_rotary_factor * n_embd) / n_head,
// rope_factors_long / rope_factors_short and rope.scaling.attn_factor. Tests, the HF-vs-GGUF
// check and bench/llama-parity runs read the same files. Tokenizer: stories260K's vocabulary.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { phi3 } from '../src/model/architectures/phi3';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { archMetadata, ggufTokenizerMetadata } from '../src/model/gguf/write-model';
import { gv, writeGguf, type GgufTypedValue, type GgufWriteType } from '../src/model/gguf/writer';
import { writeSafetensors } from '../src/model/hf/safetensors-writer';
import { ggufVocabToTokenizerJson } from '../src/model/tokenizer';
import type { DecoderArchConfig } from '../src/model/types';
import { uniformSource } from './random-llama';

export interface Phi3Shape {
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  /** config.json partial_rotary_factor (Phi-4-mini 0.75); 1 rotates whole heads (Phi-3.5-mini). */
  partialRotaryFactor: number;
  /** LongRoPE with this original_max_position_embeddings (max_position_embeddings is 64x it; llama.cpp pads contexts to 256); null: plain RoPE. */
  longRopeOriginal: number | null;
  tieWordEmbeddings: boolean;
  /** config.json sliding_window (Phi-4-mini: 262144, beyond its context). */
  slidingWindow: number;
}

/** A Phi-4-mini-shaped toy: GQA, partial rotary 0.75, LongRoPE, tied head. */
export const PHI4_MINI_TOY: Phi3Shape = {
  hiddenSize: 128,
  intermediateSize: 160,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  partialRotaryFactor: 0.75,
  longRopeOriginal: 256,
  tieWordEmbeddings: true,
  slidingWindow: 262144,
};

export interface Phi3Files {
  hfDir: string;
  gguf: string;
  configJson: Record<string, unknown>;
  /** The stored tensors by HF name (fused, as in model.safetensors). */
  tensors: Map<string, Float32Array>;
}

/** Phi-4-mini's config.json keys for `shape` (vocabulary and special ids from the tokenizer). */
export function phi3ConfigJson(shape: Phi3Shape, vocabSize: number, bos: number, eos: number, seed: number): Record<string, unknown> {
  const headDim = shape.hiddenSize / shape.numHeads;
  const half = Math.floor(headDim * shape.partialRotaryFactor) / 2;
  const next = uniformSource(seed ^ 0x5eed);
  // Short factors near 1, long ones stretched (as the released tables: 1..~1.5 and 1..~50).
  const factors = (lo: number, hi: number) => Array.from({ length: half }, (_, i) => lo + ((hi - lo) * i) / Math.max(1, half - 1) + 0.05 * next());
  const original = shape.longRopeOriginal;
  return {
    architectures: ['Phi3ForCausalLM'],
    model_type: 'phi3',
    hidden_size: shape.hiddenSize,
    intermediate_size: shape.intermediateSize,
    num_hidden_layers: shape.numLayers,
    num_attention_heads: shape.numHeads,
    num_key_value_heads: shape.numKvHeads,
    hidden_act: 'silu',
    vocab_size: vocabSize,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    partial_rotary_factor: shape.partialRotaryFactor,
    max_position_embeddings: original === null ? 4096 : original * 64,
    ...(original === null ? { rope_scaling: null } : {
      original_max_position_embeddings: original,
      rope_scaling: { type: 'longrope', short_factor: factors(1, 1.5), long_factor: factors(1, 40) },
    }),
    sliding_window: shape.slidingWindow,
    tie_word_embeddings: shape.tieWordEmbeddings,
    attention_bias: false,
    attention_dropout: 0,
    resid_pdrop: 0,
    embd_pdrop: 0,
    bos_token_id: bos,
    eos_token_id: eos,
    torch_dtype: 'float32',
  };
}

/** Random stored tensors (fused names) for `config`: linears ~ U(±sqrt(3/fan_in)), norms 1 ± 0.2, embedding U(±1). */
function randomTensors(config: DecoderArchConfig, seed: number): Array<{ name: string; shape: number[]; data: Float32Array }> {
  const next = uniformSource(seed);
  return phi3.weightSpecs(config, { kind: 'logits' }).map(({ name, shape, isNorm }) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    const scale = isNorm ? 0.2 : name === 'model.embed_tokens.weight' ? 1 : Math.sqrt(3 / shape[1]);
    for (let i = 0; i < data.length; i++) data[i] = (isNorm ? 1 : 0) + scale * next();
    return { name, shape, data };
  });
}

/**
 * Writes `<dir>/hf` and `<dir>/model-<type>.gguf` from the same seeded weights, with stories260K's
 * tokenizer (`storiesGguf`). The GGUF's matrices are `matrixType` (F32 for exact comparisons).
 */
export async function writePhi3Model(dir: string, shape: Phi3Shape, storiesGguf: string, seed = 3, matrixType: GgufWriteType = 'f32'): Promise<Phi3Files> {
  const stories = await readGgufFile(storiesGguf);
  const tokens = stories.metadata['tokenizer.ggml.tokens'] as string[];
  const bos = Number(stories.metadata['tokenizer.ggml.bos_token_id']);
  const eos = Number(stories.metadata['tokenizer.ggml.eos_token_id']);
  const configJson = phi3ConfigJson(shape, tokens.length, bos, eos, seed);
  const hfDir = join(dir, 'hf');
  mkdirSync(hfDir, { recursive: true });
  const config = phi3.hf.config(configJson, { source: hfDir, hasTensor: () => null });
  const tensors = randomTensors(config, seed);
  writeFileSync(join(hfDir, 'config.json'), JSON.stringify(configJson, null, 2));
  writeSafetensors(join(hfDir, 'model.safetensors'), tensors.map(({ name, shape: s, data }) => ({ name, tensor: { kind: 'f32', shape: s, data } })), 'F32');
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(stories.metadata);
  writeFileSync(join(hfDir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
  writeFileSync(join(hfDir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  const gguf = join(dir, `model-${matrixType}.gguf`);
  writePhi3Gguf(gguf, config, configJson, tensors, ggufTokenizerMetadata(stories), matrixType);
  return { hfDir, gguf, configJson, tensors: new Map(tensors.map((t) => [t.name, t.data])) };
}

/** convert_hf_to_gguf.py's Phi3MiniModel: metadata and tensors of the converted file. */
function writePhi3Gguf(
  path: string,
  config: DecoderArchConfig,
  json: Record<string, unknown>,
  tensors: Array<{ name: string; shape: number[]; data: Float32Array }>,
  tokenizer: ReturnType<typeof ggufTokenizerMetadata>,
  matrixType: GgufWriteType,
): void {
  const mapping = phi3.gguf!;
  // general.name must not contain "phi3": llama.cpp then expects Phi-3's own special tokens in the vocabulary.
  const metadata: Record<string, GgufTypedValue> = { ...archMetadata(config, 'ortllm-random-toy', matrixType), ...tokenizer, 'phi3.attention.sliding_window': gv.u32(Number(json.sliding_window)) };
  const toWrite = tensors.map(({ name, shape, data }) => ({ name: mapping.ggufName(name), shape, type: shape.length === 1 ? ('f32' as const) : matrixType, data }));
  const scaling = config.ropeScaling;
  if (scaling?.rope_type === 'longrope') {
    metadata['phi3.rope.scaling.original_context_length'] = gv.u32(Number(scaling.original_max_position_embeddings));
    metadata['phi3.rope.scaling.attn_factor'] = gv.f32(Number(scaling.attention_factor));
    for (const which of ['long', 'short'] as const) {
      const factors = Float32Array.from(scaling[`${which}_factor`] as number[]);
      toWrite.push({ name: `rope_factors_${which}.weight`, shape: [factors.length], type: 'f32', data: factors });
    }
  }
  writeGguf(path, metadata, toWrite);
}
