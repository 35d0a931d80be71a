// The I/O contract of every pooling graph (encoders, and decoders served for pooling), and the
// pieces they share. The runner (runner/pooling-runner.ts) pads a batch of B sequences to the
// longest, S tokens, and feeds:
//   input_ids      [B,S] int64   (padding: any id, masked)
//   token_type_ids [B,S] int64   only when the graph declares it (BERT sentence pairs)
//   attention_mask [B,S] bool    true for real tokens
//   pool_weights   [B,S] float   each sequence's weights over its positions: one-hot on the first
//                                (CLS) or last (LAST) token, 1/n on every real token (MEAN)
// and fetches one output:
//   pooled         [B,D] float   the pooled hidden state (D = hidden size), or the classifier's
//                                logits (D = num_labels); normalisation and activations are left
//                                to the caller, per request.
// Positions are computed in the graph (0.., plus an architecture's offset), so the runner never
// knows how an architecture numbers them. Pooling is one batched MatMul of the weights with the
// final hidden states, so only B rows ever leave the graph.
import { attrInt, type GraphBuilder } from './graph-builder';
import { OnnxDataType } from './onnx-proto';

export const PoolingInputs = {
  inputIds: 'input_ids',
  tokenTypeIds: 'token_type_ids',
  attentionMask: 'attention_mask',
  poolWeights: 'pool_weights',
} as const;

export const PoolingOutputs = { pooled: 'pooled' } as const;

export interface PoolingGraphInputs {
  inputIds: string;
  attentionMask: string;
  poolWeights: string;
  /** [1] int64: S, the padded sequence length. */
  seqLen: string;
}

/** Declares input_ids, attention_mask and pool_weights (token_type_ids is the caller's, when it has types). */
export function declarePoolingInputs(g: GraphBuilder): PoolingGraphInputs {
  const inputIds = g.input(PoolingInputs.inputIds, OnnxDataType.INT64, ['batch', 'seq']);
  const attentionMask = g.input(PoolingInputs.attentionMask, OnnxDataType.BOOL, ['batch', 'seq']);
  const poolWeights = g.input(PoolingInputs.poolWeights, OnnxDataType.FLOAT, ['batch', 'seq']);
  const seqLen = g.op('Slice', [g.op('Shape', [inputIds]), g.constInt64([1]), g.constInt64([2])]);
  return { inputIds, attentionMask, poolWeights, seqLen };
}

/** Positions offset, offset+1, … offset+S-1 as a [S] int64 vector. */
export function positionRange(g: GraphBuilder, seqLen: string, offset: number): string {
  const start = g.constInt64([offset], []);
  const limit = g.op('Add', [g.op('Squeeze', [seqLen, g.constInt64([0])]), start]);
  return g.op('Range', [start, limit, g.constInt64([1], [])]);
}

/**
 * The [B,1,S,S] boolean mask the onnx Attention op takes: a query attends to every real key
 * (bidirectional), or to real keys at or before it (causal). Padded queries see real keys too,
 * so no softmax row is empty; their outputs are never pooled.
 */
export function attentionMask4d(g: GraphBuilder, inputs: Pick<PoolingGraphInputs, 'attentionMask' | 'seqLen'>, causal: boolean): string {
  const keys = g.op('Unsqueeze', [inputs.attentionMask, g.constInt64([1, 2])]); // [B,1,1,S]
  if (!causal) {
    const shape = g.op('Concat', [g.constInt64([1, 1]), inputs.seqLen, g.constInt64([1])], { axis: attrInt(0) });
    return g.op('Expand', [keys, shape]);
  }
  const positions = positionRange(g, inputs.seqLen, 0);
  const rows = g.op('Unsqueeze', [positions, g.constInt64([1])]); // [S,1]
  const cols = g.op('Unsqueeze', [positions, g.constInt64([0])]); // [1,S]
  return g.op('And', [keys, g.op('LessOrEqual', [cols, rows])]);
}

/** pooled [B,H] = Σ_s pool_weights[b,s] · hidden[b,s,:], from the flat [B*S,H] final hidden states. */
export function poolHidden(g: GraphBuilder, inputs: Pick<PoolingGraphInputs, 'poolWeights'>, hiddenFlat: string, hiddenSize: number): string {
  const batchSeqHidden = g.op('Concat', [g.op('Shape', [inputs.poolWeights]), g.constInt64([hiddenSize])], { axis: attrInt(0) });
  const hidden3d = g.op('Reshape', [hiddenFlat, batchSeqHidden]);
  const weights = g.op('Unsqueeze', [inputs.poolWeights, g.constInt64([1])]); // [B,1,S]
  return g.op('Reshape', [g.op('MatMul', [weights, hidden3d]), g.constInt64([-1, hiddenSize])]);
}

/** Names `value` [B,D] as the graph's `pooled` output. */
export function emitPooled(g: GraphBuilder, value: string, size: number): void {
  g.node('Identity', [value], [PoolingOutputs.pooled]);
  g.output(PoolingOutputs.pooled, OnnxDataType.FLOAT, ['batch', size]);
}
