// What BERT-style encoders (BERT, XLM-RoBERTa) share: the config.json mapping, canonical
// BertModel weight names, and the pooling graph (graph/encoder-graph.ts). Each member (bert.ts,
// xlm-roberta.ts) states its checkpoint prefix, how it numbers positions and its classifier head.

import { buildEncoderGraph, dense, type PooledHead } from '../graph/encoder-graph';
import { encoderSegments } from '../graph/encoder-segments';
import type { GraphBuilder } from '../graph/graph-builder';
import type { LinearOptions } from '../graph/linear';
import type { EncoderArchConfig, ModelOutput, ModelWeights } from '../types';
import type { ArchitectureDescriptor, HfConfigContext, WeightSpec } from './architecture';
import { numberReader, type Json } from './hf-json';

/** A sequence-classification head on the pooled (CLS) hidden state: its weights and its graph. */
export interface ClassifierHead {
  specs(config: EncoderArchConfig, numLabels: number): WeightSpec[];
  emit(g: GraphBuilder, pooled: string, weights: ModelWeights, config: EncoderArchConfig, opts: LinearOptions): string;
}

export interface EncoderTraits {
  name: string;
  modelTypes: readonly string[];
  /** What *ForSequenceClassification / *ForMaskedLM checkpoints put before the encoder's names. */
  checkpointPrefix: string;
  /** Position id of a sequence's first token. */
  positionOffset: (json: Json) => number;
  classifier: ClassifierHead;
}

/** Names of heads that sit on top of the encoder (the pooler, classifiers, pre-training heads). */
const HEAD_NAMES = /^(pooler|classifier|cls|lm_head)\./;
/** Buffers stored beside the weights. */
const NOT_WEIGHTS = /^embeddings\.(position_ids|token_type_ids)$/;

export function encoderDescriptor(traits: EncoderTraits): ArchitectureDescriptor<EncoderArchConfig> {
  const specs = (config: EncoderArchConfig, output: ModelOutput): WeightSpec[] => [
    ...encoderBodySpecs(config),
    ...(output.kind === 'classifier' ? traits.classifier.specs(config, output.numLabels) : []),
  ];
  return {
    name: traits.name,
    defaultPooling: 'CLS',
    sentencePairs: true,
    hf: {
      modelTypes: traits.modelTypes,
      config: (json, ctx) => encoderHfConfig(json, ctx, traits),
      tensorName: (stored, config, output) => {
        const unprefixed = stored.startsWith(traits.checkpointPrefix) ? stored.slice(traits.checkpointPrefix.length) : stored;
        // Checkpoints from before PyTorch's LayerNorm renaming call its gain and bias gamma and beta.
        const name = unprefixed.replace(/LayerNorm\.gamma$/, 'LayerNorm.weight').replace(/LayerNorm\.beta$/, 'LayerNorm.bias');
        if (NOT_WEIGHTS.test(name)) return null;
        // Heads the served task does not use (a BertModel's pooler, an MLM head) stay on disk.
        if (HEAD_NAMES.test(name) && !specs(config, output).some((s) => s.name === name)) return null;
        return name;
      },
    },
    weightSpecs: specs,
    contextLength: (config) => config.maxPositionEmbeddings - config.positionOffset,
    graphs: {
      pooling: (config, weights, output, opts) => buildEncoderGraph(config, weights, opts, pooledHead(traits, config, weights, output, opts)),
      // The head stays a float32 graph: one row per sequence.
      poolingSegments: (config, weights, output) => encoderSegments(config, weights, pooledHead(traits, config, weights, output, { keepQuantized: true })),
    },
  };
}

/** The classifier head on the pooled vector when the model is served as a classifier; null for embeddings. */
function pooledHead(traits: EncoderTraits, config: EncoderArchConfig, weights: ModelWeights, output: ModelOutput, opts: LinearOptions): PooledHead | null {
  if (output.kind === 'logits') throw new Error(`${config.architecture} models do not generate text`);
  return output.kind === 'classifier' ? (g, pooled) => ({ value: traits.classifier.emit(g, pooled, weights, config, opts), size: output.numLabels }) : null;
}

const ACTIVATIONS: Readonly<Record<string, EncoderArchConfig['hiddenAct']>> = {
  gelu: 'gelu',
  gelu_new: 'gelu_tanh',
  gelu_pytorch_tanh: 'gelu_tanh',
  gelu_fast: 'gelu_tanh',
  relu: 'relu',
};

function encoderHfConfig(json: Json, ctx: HfConfigContext, traits: EncoderTraits): EncoderArchConfig {
  const num = numberReader(json, ctx.source);
  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  const act = typeof json.hidden_act === 'string' ? json.hidden_act : 'gelu';
  const hiddenAct = ACTIVATIONS[act];
  if (!hiddenAct) throw new Error(`${ctx.source}: hidden_act "${act}" is not supported (supported: ${Object.keys(ACTIVATIONS).join(', ')})`);
  const positionType = json.position_embedding_type ?? 'absolute';
  if (positionType !== 'absolute') throw new Error(`${ctx.source}: position_embedding_type ${JSON.stringify(positionType)} is not supported (only absolute)`);
  return {
    architecture: traits.name,
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads,
    numKvHeads: numHeads,
    headDim: hiddenSize / numHeads,
    vocabSize: num('vocab_size'),
    maxPositionEmbeddings: num('max_position_embeddings', 512),
    layerNormEps: num('layer_norm_eps', 1e-12),
    hiddenAct,
    typeVocabSize: num('type_vocab_size', 2),
    positionOffset: traits.positionOffset(json),
  };
}

function encoderBodySpecs(c: EncoderArchConfig): WeightSpec[] {
  const h = c.hiddenSize;
  const linear = linearSpecs;
  const norm = (name: string): WeightSpec[] => [
    { name: `${name}.weight`, shape: [h], isNorm: true },
    { name: `${name}.bias`, shape: [h], isNorm: false },
  ];
  const specs: WeightSpec[] = [
    { name: 'embeddings.word_embeddings.weight', shape: [c.vocabSize, h], isNorm: false },
    { name: 'embeddings.position_embeddings.weight', shape: [c.maxPositionEmbeddings, h], isNorm: false },
    { name: 'embeddings.token_type_embeddings.weight', shape: [c.typeVocabSize, h], isNorm: false },
    ...norm('embeddings.LayerNorm'),
  ];
  for (let l = 0; l < c.numLayers; l++) {
    const p = `encoder.layer.${l}.`;
    specs.push(
      ...linear(`${p}attention.self.query`, h, h),
      ...linear(`${p}attention.self.key`, h, h),
      ...linear(`${p}attention.self.value`, h, h),
      ...linear(`${p}attention.output.dense`, h, h),
      ...norm(`${p}attention.output.LayerNorm`),
      ...linear(`${p}intermediate.dense`, c.intermediateSize, h),
      ...linear(`${p}output.dense`, h, c.intermediateSize),
      ...norm(`${p}output.LayerNorm`),
    );
  }
  return specs;
}

/** A linear layer's weight and bias specs. */
export function linearSpecs(name: string, out: number, inp: number): WeightSpec[] {
  return [
    { name: `${name}.weight`, shape: [out, inp], isNorm: false },
    { name: `${name}.bias`, shape: [out], isNorm: false },
  ];
}

/** tanh(W1 x + b1) then W2 · + b2: BERT's pooler + classifier and RoBERTa's classification head alike. */
export function tanhThenLinear(first: string, second: string): ClassifierHead {
  return {
    specs: (config, numLabels) => [...linearSpecs(first, config.hiddenSize, config.hiddenSize), ...linearSpecs(second, numLabels, config.hiddenSize)],
    emit: (g, pooled, weights, config, opts) => {
      const hidden = g.op('Tanh', [dense(g, weights, pooled, first, config.hiddenSize, opts)]);
      return dense(g, weights, hidden, second, config.hiddenSize, opts);
    },
  };
}
