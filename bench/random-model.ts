// Writes the benchmark's random Llama GGUFs (seeded weights, Q8_0 matrices), so ortllm and
// llama.cpp load the very same file. Their tokenizer is stories260K's SentencePiece vocabulary
// padded with filler pieces to 32000 entries (prompts only use the real pieces).

import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf, type HfTensorSource } from '../src/model/gguf/write-model';
import { gv, type GgufTypedValue } from '../src/model/gguf/writer';
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

export const BENCH_SHAPES = { '100m': BENCH_100M_CONFIG, '1b': BENCH_1B_CONFIG, moe: BENCH_MOE_CONFIG } as const;
export type BenchShape = keyof typeof BENCH_SHAPES;

function benchTensors(config: DecoderArchConfig): HfTensorSource[] {
  return lazyRandomTensors(config, 1234).map(({ name, shape, values }) => ({ name, shape, values }));
}

/** stories260K's tokenizer.* keys, with the vocabulary padded to `vocabSize` pieces. */
async function paddedTokenizerMetadata(storiesPath: string, vocabSize: number): Promise<Record<string, GgufTypedValue>> {
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
export async function ensureBenchModel(shape: BenchShape, cacheDir: string, storiesPath: string): Promise<string> {
  const path = join(cacheDir, `bench-${shape}-q8_0-v2.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  const c = BENCH_SHAPES[shape];
  const tmp = `${path}.partial`;
  writeModelGguf(tmp, c, benchTensors(c), await paddedTokenizerMetadata(storiesPath, c.vocabSize), 'q8_0', `ortllm-bench-${shape}`);
  renameSync(tmp, path);
  return path;
}

/** `node dist/bench/random-model.js 1b [DIR]`: writes (or finds) a bench model and prints its path. */
if (require.main === module) {
  const shape = (process.argv[2] ?? '1b') as BenchShape;
  if (!(shape in BENCH_SHAPES)) throw new Error(`unknown shape '${shape}' (${Object.keys(BENCH_SHAPES).join(', ')})`);
  const root = join(__dirname, '..', '..');
  const stories = join(root, '..', 'shared', 'models', 'stories260K.gguf');
  ensureBenchModel(shape, process.argv[3] ?? join(root, '.bench-cache'), stories).then(
    (path) => console.log(path),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
