// What a model is served as, from vLLM's flags and what the checkpoint says: --runner
// (generate | pooling), --convert (a decoder as an embedder or classifier), --pooler-config, and
// for HF directories config.json's `architectures` class and the sentence-transformers files.
// The result decides the runner's output (and so the graph's head) and the pooling defaults.

import { isObject, type Json } from './architectures/hf-json';
import type { SentenceTransformersConfig } from './hf/sentence-transformers';
import type { ModelArchConfig, ModelOutput, ModelServingFlags, PoolerSettings, PoolingTask, PoolingType } from './types';

export const DEFAULT_SERVING_FLAGS: ModelServingFlags = { runner: 'auto', convert: 'auto', poolerConfig: null };

export interface ModelPlan {
  output: ModelOutput;
  pooler: PoolerSettings | null;
  /** sentence_bert_config.json max_seq_length: the context length is capped to it. */
  maxSeqLength: number | null;
}

/** What planning reads of an architecture descriptor (src/model/architectures/architecture.ts). */
export interface PlannedArchitecture {
  name: string;
  defaultPooling: PoolingType;
  sentencePairs: boolean;
  graphs: { causalLm?: unknown; pooling?: unknown; encoderDecoder?: unknown };
}

export interface PlanInputs {
  source: string;
  descriptor: PlannedArchitecture;
  config: ModelArchConfig;
  /** config.json; null for GGUF files and the dummy model. */
  configJson: Json | null;
  sentenceTransformers: SentenceTransformersConfig | null;
  flags: ModelServingFlags;
}

/**
 * vLLM's defaults by the suffix of the `architectures` class (first match wins, so `Model`, the
 * catch-all of BertModel / MistralModel / Qwen2Model, comes last).
 */
const SUFFIX_DEFAULTS: ReadonlyArray<readonly [suffix: string, runner: 'generate' | 'pooling', task: PoolingTask | 'reward' | null]> = [
  ['ForCausalLM', 'generate', null],
  ['ForConditionalGeneration', 'generate', null],
  ['ChatModel', 'generate', null],
  ['LMHeadModel', 'generate', null],
  ['ForTextEncoding', 'pooling', 'embed'],
  ['EmbeddingModel', 'pooling', 'embed'],
  ['ForSequenceClassification', 'pooling', 'classify'],
  ['ClassificationModel', 'pooling', 'classify'],
  ['ForRewardModeling', 'pooling', 'reward'],
  ['RewardModel', 'pooling', 'reward'],
  ['Model', 'pooling', 'embed'],
];

const POOLING_TYPES: readonly PoolingType[] = ['CLS', 'MEAN', 'LAST'];

export function planModel(inputs: PlanInputs): ModelPlan {
  const { descriptor, flags, source } = inputs;
  const className = architectureClass(inputs.configJson);
  const byClass = SUFFIX_DEFAULTS.find(([suffix]) => className?.endsWith(suffix));
  // GGUF files and unknown classes: what the architecture can do, generation first.
  const classRunner = byClass?.[1] ?? (descriptor.graphs.causalLm ? 'generate' : 'pooling');
  const converted = flags.convert !== 'auto' && flags.convert !== 'none';
  const runner = flags.runner !== 'auto' ? flags.runner : converted ? 'pooling' : classRunner;
  const what = className ?? `${descriptor.name} model`;
  // Encoder-decoder speech models transcribe; they have no other runner.
  if (descriptor.graphs.encoderDecoder) {
    if (flags.runner === 'pooling' || converted) throw new Error(`${source}: ${what} transcribes audio; it has no pooling runner`);
    return { output: { kind: 'transcription' }, pooler: null, maxSeqLength: null };
  }

  if (runner === 'generate') {
    if (converted) throw new Error(`--convert ${flags.convert} needs the pooling runner (--runner pooling or auto)`);
    if (!descriptor.graphs.causalLm) throw new Error(`${source}: ${what} does not generate text; serve it with --runner pooling`);
    return { output: { kind: 'logits' }, pooler: null, maxSeqLength: null };
  }
  if (!descriptor.graphs.pooling) throw new Error(`${source}: ${what} cannot be served with --runner pooling`);
  const task = converted ? flags.convert : byClass?.[1] === 'pooling' ? byClass[2] : 'embed';
  if (task === 'reward' || task === 'none' || task === null || task === 'auto') {
    throw new Error(`${source}: reward models (--convert reward) are not supported; use embed or classify`);
  }
  return planPooling(inputs, task);
}

function planPooling(inputs: PlanInputs, task: PoolingTask): ModelPlan {
  const { descriptor, configJson, flags, source } = inputs;
  const st = inputs.sentenceTransformers;
  const poolerFlag = flags.poolerConfig ?? {};
  const pooling = poolingType(poolerFlag.pooling_type, source) ?? (task === 'embed' ? st?.pooling : null) ?? descriptor.defaultPooling;
  const labels = classLabels(configJson);
  const matryoshkaDimensions = intList(configJson?.matryoshka_dimensions);
  const matryoshka = matryoshkaDimensions !== null || configJson?.is_matryoshka === true;
  const enableChunkedProcessing = poolerFlag.enable_chunked_processing === true;
  if (enableChunkedProcessing && (task !== 'embed' || pooling !== 'MEAN')) {
    throw new Error('--pooler-config enable_chunked_processing needs an embedding model with MEAN pooling (chunk embeddings are averaged)');
  }
  const dimensions = poolerFlag.dimensions ?? null;
  if (dimensions !== null && (!matryoshka || (matryoshkaDimensions !== null && !matryoshkaDimensions.includes(dimensions)))) {
    throw new Error(`--pooler-config dimensions ${dimensions}: the model does not support Matryoshka dimensions ${matryoshkaDimensions ? `other than ${matryoshkaDimensions.join(', ')}` : 'at all'}`);
  }
  const pooler: PoolerSettings = {
    task,
    pooling,
    normalize: poolerFlag.normalize ?? true,
    dimensions,
    matryoshka,
    matryoshkaDimensions,
    enableChunkedProcessing,
    maxEmbedLen: poolerFlag.max_embed_len ?? null,
    activation: poolerFlag.use_activation === false ? 'identity' : classifierActivation(configJson, labels.length),
    labels,
    sentencePairs: descriptor.sentencePairs,
    lowerCaseInputs: st?.doLowerCase ?? false,
  };
  const output: ModelOutput = task === 'embed' ? { kind: 'pooled', pooling } : { kind: 'classifier', pooling, numLabels: labels.length };
  return { output, pooler, maxSeqLength: st?.maxSeqLength ?? null };
}

function architectureClass(configJson: Json | null): string | null {
  const list = configJson?.architectures;
  return Array.isArray(list) && typeof list[0] === 'string' ? list[0] : null;
}

function poolingType(value: string | undefined, source: string): PoolingType | null {
  if (value === undefined) return null;
  const upper = value.toUpperCase() as PoolingType;
  if (!POOLING_TYPES.includes(upper)) throw new Error(`${source}: pooling_type ${value} is not supported (supported: ${POOLING_TYPES.join(', ')})`);
  return upper;
}

/** id2label in index order (transformers' num_labels is its length); LABEL_i names when only num_labels is set. */
function classLabels(configJson: Json | null): string[] {
  const id2label = configJson?.id2label;
  if (isObject(id2label) && Object.keys(id2label).length > 0) {
    return Object.entries(id2label)
      .map(([k, v]) => [Number(k), String(v)] as const)
      .sort((a, b) => a[0] - b[0])
      .map(([, label]) => label);
  }
  const n = typeof configJson?.num_labels === 'number' ? configJson.num_labels : 2;
  return Array.from({ length: n }, (_, i) => `LABEL_${i}`);
}

/**
 * As vLLM resolves a classifier's activation: a sentence-transformers CrossEncoder's
 * activation_fn when set, else sigmoid for one label or multi-label problems, softmax otherwise.
 */
function classifierActivation(configJson: Json | null, numLabels: number): PoolerSettings['activation'] {
  const st = configJson?.sentence_transformers;
  const fn = isObject(st) && typeof st.activation_fn === 'string' ? st.activation_fn : null;
  if (fn?.endsWith('.Sigmoid')) return 'sigmoid';
  if (fn?.endsWith('.Identity')) return 'identity';
  if (fn?.endsWith('.Softmax')) return 'softmax';
  return numLabels === 1 || configJson?.problem_type === 'multi_label_classification' ? 'sigmoid' : 'softmax';
}

function intList(value: unknown): number[] | null {
  return Array.isArray(value) && value.length > 0 && value.every((v) => Number.isInteger(v)) ? (value as number[]) : null;
}
