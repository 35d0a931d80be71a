// The BERT-style encoder (encoder-graph.ts) cut for the pooling runner's bfloat16 path
// (runner/bf16-pooling-runner.ts): the addon's AVX512-BF16 kernels run every encoder linear
// (native/src/bf16-gemm.cc: fused QKV, attention output, FFN up with its activation, FFN down),
// the residual add + LayerNorms and the self-attention (native/src/bf16-encoder-attention.cc);
// the embeddings (the runner adds the table rows; the addon's addLayerNorm normalises them) and the
// pooling are the runner's too; onnxruntime keeps only a classifier head, in one small graph:
//
//   pool       hidden [B*S, H], pool_weights [B,S] → pooled [B, D]     (pooling, then the classifier
//              head in float32; built only when the model has a head)
//
// Per layer, between them: qkv = x Wqkv + b; context = attention(qkv); a = LN(context Wo + bo + x);
// x = LN(act(a W1 + b1) W2 + b2 + a).
import { GraphBuilder, type BuiltModel } from './graph-builder';
import { addRow, type PooledHead } from './encoder-graph';
import { OnnxDataType } from './onnx-proto';
import { emitPooled, PoolingInputs, poolHidden } from './pooling-graph';
import { checkLinear, concatF32, requireWeight, toF32 } from './weights';
import type { EncoderArchConfig, ModelWeights } from '../types';

/** The segments' own tensor names (the pooling inputs keep theirs). */
export const EncoderSegmentNames = { hidden: 'hidden' } as const;

/** A float32 linear y = x Wᵀ + b: W [n, k] row-major. */
export interface EncoderLinear {
  weight: Float32Array;
  bias: Float32Array;
  n: number;
  k: number;
}

export interface LayerNormWeights {
  gamma: Float32Array;
  beta: Float32Array;
}

/** Layer l's linears (QKV stacked q, k, v) and its two LayerNorms. */
export interface EncoderLayerWeights {
  qkv: EncoderLinear;
  output: EncoderLinear;
  attentionNorm: LayerNormWeights;
  up: EncoderLinear;
  down: EncoderLinear;
  outputNorm: LayerNormWeights;
}

/**
 * The embedding tables as the runner adds them: row i of the sequence is
 * LayerNorm(word[id] + position[i] + typeDeltas[type]), where `position` starts at the model's
 * position offset and already holds token type 0's row, and typeDeltas[t] = type t's row - type
 * 0's (null for a single token type). Most inputs are all type 0: their rows are two copies.
 */
export interface EncoderEmbeddingTables {
  word: Float32Array;
  position: Float32Array;
  /** Rows of `position` (the longest sequence it covers). */
  positions: number;
  typeDeltas: Float32Array | null;
  norm: LayerNormWeights;
}

export interface EncoderSegments {
  embeddings: EncoderEmbeddingTables;
  /** Pooling + the classifier head; null without a head (the runner pools). */
  pool: BuiltModel | null;
  /** Layer l's weights, read when asked (to be packed, then dropped). */
  layer(l: number): EncoderLayerWeights;
}

export function encoderSegments(c: EncoderArchConfig, weights: ModelWeights, head: PooledHead | null): EncoderSegments {
  const h = c.hiddenSize;
  const f32 = (name: string) => toF32(requireWeight(weights, name));
  const linear = (names: string[], k: number): EncoderLinear => {
    const parts = names.map((name) => requireWeight(weights, `${name}.weight`));
    parts.forEach((t, i) => checkLinear(`${names[i]}.weight`, t, k));
    const weight = concatF32(parts.map(toF32));
    return { weight, bias: concatF32(names.map((name) => f32(`${name}.bias`))), n: weight.length / k, k };
  };
  const norm = (name: string): LayerNormWeights => ({ gamma: f32(`${name}.weight`), beta: f32(`${name}.bias`) });
  return {
    embeddings: embeddingTables(c, weights),
    pool: head ? buildPoolSegment(c, head) : null,
    layer: (l) => {
      const p = `encoder.layer.${l}.`;
      return {
        qkv: linear(['query', 'key', 'value'].map((n) => `${p}attention.self.${n}`), h),
        output: linear([`${p}attention.output.dense`], h),
        attentionNorm: norm(`${p}attention.output.LayerNorm`),
        up: linear([`${p}intermediate.dense`], h),
        down: linear([`${p}output.dense`], c.intermediateSize),
        outputNorm: norm(`${p}output.LayerNorm`),
      };
    },
  };
}

function embeddingTables(c: EncoderArchConfig, weights: ModelWeights): EncoderEmbeddingTables {
  const h = c.hiddenSize;
  const f32 = (name: string) => toF32(requireWeight(weights, name));
  const types = f32('embeddings.token_type_embeddings.weight');
  const position = addRow(f32('embeddings.position_embeddings.weight').subarray(c.positionOffset * h), types, h);
  const typeDeltas = c.typeVocabSize === 1 ? null : types.map((v, i) => v - types[i % h]);
  return {
    word: f32('embeddings.word_embeddings.weight'),
    position,
    positions: position.length / h,
    typeDeltas,
    norm: { gamma: f32('embeddings.LayerNorm.weight'), beta: f32('embeddings.LayerNorm.bias') },
  };
}

function buildPoolSegment(c: EncoderArchConfig, head: PooledHead): BuiltModel {
  const g = new GraphBuilder(`${c.architecture}-encoder-pool`);
  const hidden = g.input(EncoderSegmentNames.hidden, OnnxDataType.FLOAT, ['rows', c.hiddenSize]);
  const poolWeights = g.input(PoolingInputs.poolWeights, OnnxDataType.FLOAT, ['batch', 'seq']);
  const pooled = poolHidden(g, { poolWeights }, hidden, c.hiddenSize);
  const result = head(g, pooled);
  emitPooled(g, result.value, result.size);
  return g.build({ '': 23 });
}
