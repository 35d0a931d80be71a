// Seeded random gpt-oss models in canonical layout (tests, and the llama.cpp parity script): a
// small config shaped like gpt-oss-20b's (alternating sliding/full layers, YaRN as shipped,
// biases everywhere, sinks, experts routed top-k) and its GGUF file as llama.cpp's converter writes it.
import { gptOssGgufMetadata, GPT_OSS_SWIGLU_ALPHA, type GptOssArchConfig } from '../src/model/gpt-oss/gpt-oss-config';
import { gptOssGgufName, gptOssWeightSpecs } from '../src/model/gpt-oss/gpt-oss-weights';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { loadGgufModel } from '../src/model/gguf/load-gguf';
import { archMetadata, ggufTokenizerMetadata } from '../src/model/gguf/write-model';
import { toF32 } from '../src/model/graph/weights';
import { gv, writeGguf, type GgufTensorToWrite, type GgufTypedValue } from '../src/model/gguf/writer';
import type { ModelWeights, WeightTensor } from '../src/model/types';
import { fill, uniformSource } from './random-llama';

/** gpt-oss-20b's config scaled down (hidden 2880 -> 64, 32 experts top-4 -> 4 top-2, window 128 -> 4). */
export function gptOssConfig(overrides: Partial<GptOssArchConfig> = {}): GptOssArchConfig {
  const numLayers = overrides.numLayers ?? 2;
  return {
    architecture: 'gpt-oss',
    hiddenSize: 64,
    intermediateSize: 32,
    numLayers,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    vocabSize: 512,
    rmsNormEps: 1e-5,
    ropeTheta: 150000,
    ropeScaling: { rope_type: 'yarn', factor: 32, original_max_position_embeddings: 4096, beta_fast: 32, beta_slow: 1 },
    maxPositionEmbeddings: 131072,
    tieWordEmbeddings: false,
    attentionBias: true,
    slidingWindow: 4,
    layerTypes: Array.from({ length: numLayers }, (_, l) => (l % 2 === 0 ? 'sliding_attention' : 'full_attention')),
    numExperts: 4,
    numExpertsPerToken: 2,
    expertIntermediateSize: 32,
    normTopKProb: true,
    swigluLimit: 7,
    swigluAlpha: GPT_OSS_SWIGLU_ALPHA,
    expertStorage: 'split',
    ...overrides,
  };
}

/**
 * Initialisation range of a canonical weight: linears 1/sqrt(fan-in), but the experts' gate and
 * up wide enough that the SwiGLU's clamp at ±7 bites, the router wide enough that tokens pick
 * different experts, and sinks of a few units so some heads give the sink most of the weight.
 */
function range(name: string, shape: number[]): { scale: number; offset: number } {
  const fanIn = shape[shape.length - 1];
  if (/(layernorm|norm)\.weight$/.test(name)) return { scale: 0.2, offset: 1 };
  if (name.endsWith('.sinks')) return { scale: 3, offset: 0 };
  if (/experts\.(gate|up)_proj\.weight$/.test(name)) return { scale: 8 / Math.sqrt(fanIn), offset: 0 };
  if (name.endsWith('mlp.gate.weight')) return { scale: 3 / Math.sqrt(fanIn), offset: 0 };
  if (name.endsWith('.bias')) return { scale: 0.3, offset: 0 };
  if (name === 'model.embed_tokens.weight') return { scale: 1, offset: 0 };
  return { scale: 1 / Math.sqrt(fanIn), offset: 0 };
}

/** Every canonical weight, drawn from one seeded stream in spec order. */
export function randomGptOssWeights(config: GptOssArchConfig, seed = 1): ModelWeights {
  const next = uniformSource(seed);
  const map = new Map<string, WeightTensor>();
  for (const { name, shape } of gptOssWeightSpecs(config, { kind: 'logits' })) {
    map.set(name, { kind: 'f32', shape, data: fill({ name, shape, ...range(name, shape) }, next) });
  }
  return { names: () => [...map.keys()], has: (n) => map.has(n), get: (n) => map.get(n)! };
}

/** Expert weight stacks: the tensors gpt-oss ships in MXFP4 (everything else stays F32 here). */
const EXPERT_WEIGHT = /\.mlp\.experts\.(gate|up|down)_proj\.weight$/;

/** Matrices llama-quantize quantizes: 2-D weights but the router (1-D tensors and biases stay F32). */
const QUANTIZABLE = /\.weight$/;
const ROUTER = /\.mlp\.gate\.weight$/;

/**
 * Writes the model as llama.cpp's converter would (tensor names, 3-D expert stacks, gpt-oss.*
 * keys): the expert stacks as `experts` (MXFP4: the released files' MOSTLY_MXFP4_MOE), the other
 * matrices but the router as `matrices`, everything else F32.
 */
export function writeGptOssGguf(
  path: string,
  config: GptOssArchConfig,
  weights: ModelWeights,
  tokenizerMetadata: Record<string, GgufTypedValue>,
  experts: 'f32' | 'mxfp4' = 'f32',
  matrices: 'f32' | 'q8_0' = 'f32',
): void {
  const typeOf = (name: string, shape: number[]): GgufTensorToWrite['type'] => {
    if (EXPERT_WEIGHT.test(name)) return experts;
    return shape.length >= 2 && QUANTIZABLE.test(name) && !ROUTER.test(name) ? matrices : 'f32';
  };
  const tensors = weights.names().map((name): GgufTensorToWrite => {
    // Loaded MXFP4 experts are Q8_0 holding the same values (mxfp4-as-f32 writes them widened).
    const t = weights.get(name);
    return { name: gptOssGgufName(name), shape: t.shape, type: typeOf(name, t.shape), data: toF32(t) };
  });
  const metadata = { ...archMetadata(config, 'ortllm-gpt-oss-random', experts), ...gptOssGgufMetadata(config), ...tokenizerMetadata };
  writeGguf(path, metadata, tensors);
}

/**
 * The vocabulary with SentencePiece byte tokens (type 6) typed as normal pieces: a random model
 * generates lone bytes of multi-byte characters, for which llama-server reports no token
 * probabilities until the character completes, so a token-by-token comparison would lose its place.
 */
function plainByteTokens(meta: Record<string, GgufTypedValue>): Record<string, GgufTypedValue> {
  const types = (meta['tokenizer.ggml.token_type'].value as number[]).map((t) => (t === 6 ? 1 : t));
  return { ...meta, 'tokenizer.ggml.token_type': gv.i32s(types) };
}

/**
 * `node dist/bench/random-gpt-oss.js OUT.gguf [f32|mxfp4|mxfp4-as-f32] [f32|q8_0] [SEED]`: a random
 * gpt-oss GGUF with stories260K's tokenizer, experts and other matrices in the given types;
 * mxfp4-as-f32 writes the MXFP4 file's dequantized weights as F32 (the same numbers without
 * llama.cpp's MXFP4 kernels, for the parity run).
 */
if (require.main === module) {
  const [out, experts = 'f32', matrices = 'f32', seed = '7'] = process.argv.slice(2);
  if (!out || !['f32', 'mxfp4', 'mxfp4-as-f32'].includes(experts) || !['f32', 'q8_0'].includes(matrices)) {
    throw new Error('usage: node dist/bench/random-gpt-oss.js OUT.gguf [f32|mxfp4|mxfp4-as-f32] [f32|q8_0] [SEED]');
  }
  const matrixType = matrices as 'f32' | 'q8_0';
  const stories = join(__dirname, '..', '..', '..', 'shared', 'models', 'stories260K.gguf');
  void (async () => {
    const tokenizer = plainByteTokens(ggufTokenizerMetadata(await readGgufFile(stories)));
    const config = gptOssConfig();
    const weights = randomGptOssWeights(config, Number(seed));
    if (experts === 'mxfp4-as-f32') {
      const mxfp4 = `${out}.mxfp4.partial`;
      writeGptOssGguf(mxfp4, config, weights, tokenizer, 'mxfp4');
      const loaded = await loadGgufModel(mxfp4, { loadWeights: true });
      writeGptOssGguf(out, config, loaded.weights!, tokenizer, 'f32', matrixType);
      rmSync(mxfp4);
    } else {
      writeGptOssGguf(out, config, weights, tokenizer, experts as 'f32' | 'mxfp4', matrixType);
    }
    console.log(out);
  })();
}
