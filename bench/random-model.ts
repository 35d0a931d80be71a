// Writes the benchmark's ~100M-parameter Llama GGUF with seeded random weights, so ortllm and
// llama.cpp load the very same file. Its tokenizer is stories260K's SentencePiece vocabulary
// padded with filler pieces to 32000 entries (prompts only use the real pieces).

import { gguf } from '@huggingface/gguf';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeModelGguf, type HfTensorSource } from '../src/model/gguf/write-model';
import { gv, type GgufTypedValue } from '../src/model/gguf/writer';
import type { ModelArchConfig } from '../src/model/types';

export const BENCH_100M_CONFIG: ModelArchConfig = {
  architecture: 'llama',
  hiddenSize: 768,
  intermediateSize: 2048,
  numLayers: 12,
  numHeads: 12,
  numKvHeads: 12,
  headDim: 64,
  vocabSize: 32000,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  ropeScaling: null,
  maxPositionEmbeddings: 2048,
  tieWordEmbeddings: false,
  attentionBias: false,
};

/** xorshift32: a seeded generator, so the file is the same on every machine. */
function seededUniform(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296 - 0.5;
  };
}

function randomTensor(name: string, shape: number[], scale: number, seed: number): HfTensorSource {
  return {
    name,
    shape,
    values: () => {
      const rand = seededUniform(seed);
      const out = new Float32Array(shape.reduce((a, b) => a * b, 1));
      for (let i = 0; i < out.length; i++) out[i] = rand() * scale;
      return out;
    },
  };
}

function onesTensor(name: string, size: number): HfTensorSource {
  return { name, shape: [size], values: () => new Float32Array(size).fill(1) };
}

function benchTensors(c: ModelArchConfig): HfTensorSource[] {
  const d = c.hiddenSize;
  const kv = c.numKvHeads * c.headDim;
  const scale = 2 / Math.sqrt(d); // keeps activations in a sane range through 12 layers
  let seed = 1234;
  const t: HfTensorSource[] = [randomTensor('model.embed_tokens.weight', [c.vocabSize, d], 1, seed++)];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}`;
    t.push(
      onesTensor(`${p}.input_layernorm.weight`, d),
      randomTensor(`${p}.self_attn.q_proj.weight`, [d, d], scale, seed++),
      randomTensor(`${p}.self_attn.k_proj.weight`, [kv, d], scale, seed++),
      randomTensor(`${p}.self_attn.v_proj.weight`, [kv, d], scale, seed++),
      randomTensor(`${p}.self_attn.o_proj.weight`, [d, d], scale, seed++),
      onesTensor(`${p}.post_attention_layernorm.weight`, d),
      randomTensor(`${p}.mlp.gate_proj.weight`, [c.intermediateSize, d], scale, seed++),
      randomTensor(`${p}.mlp.up_proj.weight`, [c.intermediateSize, d], scale, seed++),
      randomTensor(`${p}.mlp.down_proj.weight`, [d, c.intermediateSize], 2 / Math.sqrt(c.intermediateSize), seed++),
    );
  }
  t.push(onesTensor('model.norm.weight', d), randomTensor('lm_head.weight', [c.vocabSize, d], scale, seed++));
  return t;
}

/** stories260K's tokenizer.* keys, with the vocabulary padded to `vocabSize` pieces. */
async function paddedTokenizerMetadata(storiesPath: string, vocabSize: number): Promise<Record<string, GgufTypedValue>> {
  const metadata = (await gguf(storiesPath, { allowLocalFile: true })).metadata as Record<string, unknown>;
  const tokens = [...(metadata['tokenizer.ggml.tokens'] as string[])];
  const scores = [...(metadata['tokenizer.ggml.scores'] as number[])];
  const types = [...(metadata['tokenizer.ggml.token_type'] as number[])];
  for (let i = tokens.length; i < vocabSize; i++) {
    tokens.push(`▁filler${i}`);
    scores.push(-1e6 - i); // never preferred by the SentencePiece merge order
    types.push(1);
  }
  return {
    'tokenizer.ggml.model': gv.str('llama'),
    'tokenizer.ggml.tokens': gv.strings(tokens),
    'tokenizer.ggml.scores': gv.f32s(scores),
    'tokenizer.ggml.token_type': gv.i32s(types),
    'tokenizer.ggml.bos_token_id': gv.u32(Number(metadata['tokenizer.ggml.bos_token_id'] ?? 1)),
    'tokenizer.ggml.eos_token_id': gv.u32(Number(metadata['tokenizer.ggml.eos_token_id'] ?? 2)),
    'tokenizer.ggml.unknown_token_id': gv.u32(Number(metadata['tokenizer.ggml.unknown_token_id'] ?? 0)),
  };
}

/** Writes the file once (Q8_0 matrices) and reuses it on later runs. */
export async function ensureBenchModel(path: string, storiesPath: string): Promise<string> {
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  const c = BENCH_100M_CONFIG;
  const tmp = `${path}.partial`;
  writeModelGguf(tmp, c, benchTensors(c), await paddedTokenizerMetadata(storiesPath, c.vocabSize), 'q8_0', 'ortllm-bench-100m');
  renameSync(tmp, path);
  return path;
}
