// Writes the benchmark's random GGUFs (Llama shapes and Qwen3-0.6B's; seeded weights, Q8_0 matrices), so ortllm and
// llama.cpp load the very same file. Their tokenizer is stories260K's SentencePiece vocabulary
// padded with filler pieces to 32000 entries (prompts only use the real pieces).

import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf, type HfTensorSource } from '../src/model/gguf/write-model';
import { gv, type GgufTypedValue, type GgufWriteType } from '../src/model/gguf/writer';
import type { DecoderArchConfig } from '../src/model/types';
import { lazyRandomTensors, llamaConfig } from './random-llama';

/** The ~100M shape (dim 768, 12 layers, 12 heads): small enough for every machine. */
export const BENCH_100M_CONFIG: DecoderArchConfig = llamaConfig({
  hiddenSize: 768,
  intermediateSize: 2048,
  numLayers: 12,
  numHeads: 12,
  numKvHeads: 12,
  vocabSize: 32000,
  tieWordEmbeddings: false,
});

/** TinyLlama-1.1B's shape: dim 2048, 22 layers, 32 query / 4 KV heads (head 64), FFN 5632. */
export const BENCH_1B_CONFIG: DecoderArchConfig = llamaConfig({
  hiddenSize: 2048,
  intermediateSize: 5632,
  numLayers: 22,
  numHeads: 32,
  numKvHeads: 4,
  vocabSize: 32000,
  maxPositionEmbeddings: 2048,
  tieWordEmbeddings: false,
});

/** Qwen3-0.6B's shape: dim 1024, 28 layers, 16 query / 8 KV heads of 128, FFN 3072, vocab 151936, tied head, q/k norms. */
export const BENCH_QWEN3_06B_CONFIG: DecoderArchConfig = llamaConfig({
  architecture: 'qwen3',
  qkNorm: true,
  hiddenSize: 1024,
  intermediateSize: 3072,
  numLayers: 28,
  numHeads: 16,
  numKvHeads: 8,
  headDim: 128,
  vocabSize: 151936,
  rmsNormEps: 1e-6,
  ropeTheta: 1e6,
  maxPositionEmbeddings: 40960,
  tieWordEmbeddings: true,
});

/** A small Qwen3 (dim 256, 4 layers, 8 / 4 heads of 64, FFN 512, stories260K's 512 pieces), for llama.cpp parity runs. */
export const BENCH_QWEN3_TINY_CONFIG: DecoderArchConfig = { ...BENCH_QWEN3_06B_CONFIG, hiddenSize: 256, intermediateSize: 512, numLayers: 4, numHeads: 8, numKvHeads: 4, headDim: 64, vocabSize: 512, tieWordEmbeddings: false };

/**
 * A Mixtral-layout MoE of ~1.1B parameters, ~0.23B active per token: dim 1024, 16 layers, 16
 * query / 4 KV heads (head 64), 32 experts of FFN 640 per layer, top-4, renormalised.
 */
export const BENCH_MOE_CONFIG: DecoderArchConfig = llamaConfig({
  hiddenSize: 1024,
  intermediateSize: 640,
  numLayers: 16,
  numHeads: 16,
  numKvHeads: 4,
  vocabSize: 32000,
  maxPositionEmbeddings: 2048,
  tieWordEmbeddings: false,
  numExperts: 32,
  numExpertsPerToken: 4,
  expertIntermediateSize: 640,
  normTopKProb: true,
});

export const BENCH_SHAPES = { '100m': BENCH_100M_CONFIG, '1b': BENCH_1B_CONFIG, 'qwen3-0.6b': BENCH_QWEN3_06B_CONFIG, 'qwen3-tiny': BENCH_QWEN3_TINY_CONFIG, moe: BENCH_MOE_CONFIG } as const;
export type BenchShape = keyof typeof BENCH_SHAPES;

function benchTensors(config: DecoderArchConfig): HfTensorSource[] {
  return lazyRandomTensors(config, 1234).map(({ name, shape, values }) => ({ name, shape, values }));
}

/** stories260K's tokenizer.* keys, with the vocabulary padded to `vocabSize` pieces. */
export async function paddedTokenizerMetadata(storiesPath: string, vocabSize: number): Promise<Record<string, GgufTypedValue>> {
  const meta = ggufTokenizerMetadata(await readGgufFile(storiesPath));
  const tokens = [...(meta['tokenizer.ggml.tokens'].value as string[])];
  const scores = [...(meta['tokenizer.ggml.scores'].value as number[])];
  const types = [...(meta['tokenizer.ggml.token_type'].value as number[])];
  for (let i = tokens.length; i < vocabSize; i++) {
    tokens.push(`▁filler${i}`);
    scores.push(-1e6 - i); // never preferred by the SentencePiece merge order
    types.push(1);
  }
  return {
    ...meta,
    'tokenizer.ggml.tokens': gv.strings(tokens),
    'tokenizer.ggml.scores': gv.f32s(scores),
    'tokenizer.ggml.token_type': gv.i32s(types),
  };
}

/** The file of a shape in `cacheDir`, written once (tensor by tensor) and reused on later runs. */
export async function ensureBenchModel(shape: BenchShape, cacheDir: string, storiesPath: string, matrixType: GgufWriteType = 'q8_0'): Promise<string> {
  const path = join(cacheDir, `bench-${shape}-${matrixType}-v2.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  const c = BENCH_SHAPES[shape];
  const tmp = `${path}.partial`;
  writeModelGguf(tmp, c, benchTensors(c), await paddedTokenizerMetadata(storiesPath, c.vocabSize), matrixType, `ortllm-bench-${shape}`);
  renameSync(tmp, path);
  return path;
}

/** `node dist/bench/random-model.js 1b [DIR] [f32|f16|q8_0|bf16]`: writes (or finds) a bench model and prints its path. */
if (require.main === module) {
  const shape = (process.argv[2] ?? '1b') as BenchShape;
  if (!(shape in BENCH_SHAPES)) throw new Error(`unknown shape '${shape}' (${Object.keys(BENCH_SHAPES).join(', ')})`);
  const root = join(__dirname, '..', '..');
  const stories = join(root, '..', 'shared', 'models', 'stories260K.gguf');
  ensureBenchModel(shape, process.argv[3] ?? join(root, '.bench-cache'), stories, (process.argv[4] ?? 'q8_0') as GgufWriteType).then(
    (path) => console.log(path),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
