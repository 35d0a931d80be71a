// Seeded random llama weights in canonical HF layout, for tests and the forward benchmark.
import { quantizeQ8_0 } from '../src/model/gguf/quantize';
import { LoadedModel, DecoderArchConfig, ModelWeights, WeightTensor } from '../src/model/types';

export function llamaConfig(overrides: Partial<DecoderArchConfig>): DecoderArchConfig {
  const base: DecoderArchConfig = {
    architecture: 'llama',
    hiddenSize: 64,
    intermediateSize: 172,
    numLayers: 2,
    numHeads: 8,
    numKvHeads: 4,
    headDim: 8,
    vocabSize: 512,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropeScaling: null,
    maxPositionEmbeddings: 2048,
    tieWordEmbeddings: true,
    attentionBias: false,
  };
  const config = { ...base, ...overrides };
  if (overrides.headDim === undefined) config.headDim = config.hiddenSize / config.numHeads;
  return config;
}

/** xorshift32 -> uniform [-1, 1). */
function uniformSource(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2147483648 - 1;
  };
}

/** One random tensor: uniform values offset + scale * U[-1, 1). */
export interface RandomTensorSpec {
  name: string;
  shape: number[];
  scale: number;
  offset: number;
}

/** Every tensor of a llama model in canonical HF names, with its initialisation range. */
export function randomTensorSpecs(config: DecoderArchConfig): RandomTensorSpec[] {
  const specs: RandomTensorSpec[] = [];
  const add = (name: string, shape: number[], scale: number, offset = 0) => specs.push({ name, shape, scale, offset });
  const c = config;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  /** Uniform scale for a linear layer: 1/sqrt(fan-in). */
  const linear = (inp: number) => 1 / Math.sqrt(inp);
  add('model.embed_tokens.weight', [c.vocabSize, c.hiddenSize], 1);
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, [c.hiddenSize], 0.2, 1);
    add(`${p}post_attention_layernorm.weight`, [c.hiddenSize], 0.2, 1);
    add(`${p}self_attn.q_proj.weight`, [q, c.hiddenSize], linear(c.hiddenSize));
    add(`${p}self_attn.k_proj.weight`, [kv, c.hiddenSize], linear(c.hiddenSize));
    add(`${p}self_attn.v_proj.weight`, [kv, c.hiddenSize], linear(c.hiddenSize));
    if (c.attentionBias) {
      add(`${p}self_attn.q_proj.bias`, [q], 0.1);
      add(`${p}self_attn.k_proj.bias`, [kv], 0.1);
      add(`${p}self_attn.v_proj.bias`, [kv], 0.1);
    }
    if (c.qkNorm) {
      add(`${p}self_attn.q_norm.weight`, [c.headDim], 0.2, 1);
      add(`${p}self_attn.k_norm.weight`, [c.headDim], 0.2, 1);
    }
    add(`${p}self_attn.o_proj.weight`, [c.hiddenSize, q], linear(q));
    add(`${p}mlp.gate_proj.weight`, [c.intermediateSize, c.hiddenSize], linear(c.hiddenSize));
    add(`${p}mlp.up_proj.weight`, [c.intermediateSize, c.hiddenSize], linear(c.hiddenSize));
    add(`${p}mlp.down_proj.weight`, [c.hiddenSize, c.intermediateSize], linear(c.intermediateSize));
  }
  add('model.norm.weight', [c.hiddenSize], 0.2, 1);
  if (!c.tieWordEmbeddings) add('lm_head.weight', [c.vocabSize, c.hiddenSize], linear(c.hiddenSize));
  return specs;
}

function fill(spec: RandomTensorSpec, next: () => number): Float32Array {
  const data = new Float32Array(spec.shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = spec.offset + spec.scale * next();
  return data;
}

/** All tensors in memory, drawn from one stream in spec order (small models: tests, bench:forward). */
export function randomWeights(config: DecoderArchConfig, seed = 1): ModelWeights {
  const next = uniformSource(seed);
  const map = new Map<string, WeightTensor>();
  for (const spec of randomTensorSpecs(config)) map.set(spec.name, { kind: 'f32', shape: spec.shape, data: fill(spec, next) });
  return { names: () => [...map.keys()], has: (n) => map.has(n), get: (n) => map.get(n)! };
}

/**
 * The same tensors, each drawn from its own stream when asked for: a model of any size (the ~1.1B
 * benchmark model's 4.4 GB of f32) can be generated one tensor at a time.
 */
export function lazyRandomTensors(config: DecoderArchConfig, seed = 1): Array<RandomTensorSpec & { values: () => Float32Array }> {
  return randomTensorSpecs(config).map((spec, i) => ({ ...spec, values: () => fill(spec, uniformSource(seed + 7919 * (i + 1))) }));
}

/** A LoadedModel around random weights (no tokenizer). */
export function randomModel(config: DecoderArchConfig, seed = 1): LoadedModel {
  return {
    source: 'random',
    config,
    output: { kind: 'logits' },
    pooler: null,
    weights: randomWeights(config, seed),
    onnxPath: null,
    tokenizer: null,
    chatTemplate: null,
    generationDefaults: {},
    eosTokenIds: [],
    contextLength: config.maxPositionEmbeddings,
  };
}

/** The same model with every 2-D weight but the embedding stored as GGML Q8_0 (as the bench's Q8_0 GGUF files), quantized on first read. */
export function quantizedQ8(model: LoadedModel): LoadedModel {
  const src = model.weights!;
  const cache = new Map<string, WeightTensor>();
  const get = (name: string): WeightTensor => {
    const t = src.get(name);
    if (t.kind !== 'f32' || t.shape.length !== 2 || name === 'model.embed_tokens.weight') return t;
    if (!cache.has(name)) cache.set(name, { kind: 'quantized', format: 'q8_0', shape: t.shape, data: quantizeQ8_0(t.data) });
    return cache.get(name)!;
  };
  const weights: ModelWeights = { names: () => src.names(), has: (n) => src.has(n), get };
  return { ...model, weights };
}
