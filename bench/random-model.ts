// Writes the benchmark's ~100M-parameter Llama GGUF with seeded random weights, so ortllm and
// llama.cpp load the very same file. Its tokenizer is stories260K's SentencePiece vocabulary
// padded with filler pieces to 32000 entries (prompts only use the real pieces).

import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf, type HfTensorSource } from '../src/model/gguf/write-model';
import { gv, type GgufTypedValue } from '../src/model/gguf/writer';
import type { DecoderArchConfig } from '../src/model/types';
import { llamaConfig, randomWeights } from './random-llama';

/** The same ~100M shape `npm run bench:forward` measures (dim 768, 12 layers, 12 heads). */
export const BENCH_100M_CONFIG: DecoderArchConfig = llamaConfig({
  hiddenSize: 768,
  intermediateSize: 2048,
  numLayers: 12,
  numHeads: 12,
  numKvHeads: 12,
  vocabSize: 32000,
  tieWordEmbeddings: false,
});

function benchTensors(config: DecoderArchConfig): HfTensorSource[] {
  const weights = randomWeights(config, 1234);
  return weights.names().map((name) => {
    const tensor = weights.get(name);
    if (tensor.kind !== 'f32') throw new Error(`unexpected ${tensor.kind} tensor ${name}`);
    return { name, shape: tensor.shape, values: () => tensor.data };
  });
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
