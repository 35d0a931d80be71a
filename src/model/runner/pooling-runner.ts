// PoolingRunner over a pooling graph built by the architecture's descriptor (I/O contract:
// graph/pooling-graph.ts). No KV cache: each call runs whole sequences and returns one vector each.
//
// Packing: many short sequences go into one session.run, padded to the longest and masked. A
// batch of very different lengths would spend most of a run on padding, so sequences are sorted
// by length and cut into groups whose padded size stays within PADDING_SLACK of their real size.
import * as ort from 'onnxruntime-node';
import { architectureOf } from '../architectures/registry';
import { PoolingInputs, PoolingOutputs } from '../graph/pooling-graph';
import type { EncodeSequence, LoadedModel, ModelArchConfig, PoolingRunner, PoolingType } from '../types';
import { createSession, type SessionSettings } from './session';

/** A group may hold up to this many padded token slots per real token. */
const PADDING_SLACK = 1.3;

export interface PoolingRunnerOptions extends SessionSettings {
  /** Keep GGML-quantized weights quantized (MatMulNBits); default true. */
  keepQuantized?: boolean;
}

export async function createPoolingRunner(model: LoadedModel, opts: PoolingRunnerOptions): Promise<PoolingRunner> {
  const { config, output, weights } = model;
  if (!weights) throw new Error(`model ${model.source}: pooling needs weights to build a graph from (ONNX exports generate only)`);
  if (output.kind === 'logits' || output.kind === 'transcription') throw new Error('createPoolingRunner: the model is served for generation');
  const graphs = architectureOf(config).graphs;
  if (!graphs.pooling) throw new Error(`${config.architecture} models cannot be served for pooling`);
  const built = graphs.pooling(config, weights, output, { keepQuantized: opts.keepQuantized ?? true, maxPositions: model.contextLength });
  const session = await createSession(built, { device: opts.device, intraOpThreads: opts.intraOpThreads });
  const outputSize = output.kind === 'classifier' ? output.numLabels : config.hiddenSize;
  return new GraphPoolingRunner(config, session, output.pooling, outputSize);
}

class GraphPoolingRunner implements PoolingRunner {
  private readonly takesTokenTypes: boolean;
  private busy = false;

  constructor(
    readonly config: ModelArchConfig,
    private readonly session: ort.InferenceSession,
    private readonly pooling: PoolingType,
    readonly outputSize: number,
  ) {
    this.takesTokenTypes = session.inputNames.includes(PoolingInputs.tokenTypeIds);
  }

  async encode(batch: readonly EncodeSequence[]): Promise<Float32Array[]> {
    if (this.busy) throw new Error('PoolingRunner.encode called while another call is running');
    this.busy = true;
    try {
      const results = new Array<Float32Array>(batch.length);
      for (const group of packGroups(batch)) {
        const vectors = await this.run(group.map((i) => batch[i]));
        group.forEach((i, row) => (results[i] = vectors[row]));
      }
      return results;
    } finally {
      this.busy = false;
    }
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }

  private async run(group: readonly EncodeSequence[]): Promise<Float32Array[]> {
    const batch = group.length;
    const seq = Math.max(...group.map((s) => s.tokens.length));
    const ids = new BigInt64Array(batch * seq);
    const types = new BigInt64Array(batch * seq);
    const mask = new Uint8Array(batch * seq);
    const weights = new Float32Array(batch * seq);
    group.forEach((s, b) => {
      const n = s.tokens.length;
      if (n < 1) throw new Error('a pooled sequence needs at least one token');
      if (s.tokenTypeIds && s.tokenTypeIds.length !== n) throw new Error('token_type_ids must have one entry per token');
      for (let i = 0; i < n; i++) {
        ids[b * seq + i] = BigInt(s.tokens[i]);
        types[b * seq + i] = BigInt(s.tokenTypeIds?.[i] ?? 0);
        mask[b * seq + i] = 1;
      }
      fillPoolWeights(weights.subarray(b * seq, b * seq + n), this.pooling);
    });
    const dims = [batch, seq];
    const feeds: Record<string, ort.Tensor> = {
      [PoolingInputs.inputIds]: new ort.Tensor('int64', ids, dims),
      [PoolingInputs.attentionMask]: new ort.Tensor('bool', mask, dims),
      [PoolingInputs.poolWeights]: new ort.Tensor('float32', weights, dims),
    };
    if (this.takesTokenTypes) feeds[PoolingInputs.tokenTypeIds] = new ort.Tensor('int64', types, dims);
    const out = (await this.session.run(feeds))[PoolingOutputs.pooled].data as Float32Array;
    const d = this.outputSize;
    return group.map((_, b) => out.slice(b * d, (b + 1) * d));
  }
}

/** A sequence's weights over its own positions (padding keeps weight 0). */
function fillPoolWeights(weights: Float32Array, pooling: PoolingType): void {
  const n = weights.length;
  if (pooling === 'CLS') weights[0] = 1;
  else if (pooling === 'LAST') weights[n - 1] = 1;
  else weights.fill(1 / n);
}

/** Indices of `batch` grouped for padded runs: ascending length, padding within PADDING_SLACK. */
export function packGroups(batch: readonly EncodeSequence[]): number[][] {
  const order = batch.map((_, i) => i).sort((a, b) => batch[a].tokens.length - batch[b].tokens.length);
  const groups: number[][] = [];
  let current: number[] = [];
  let realTokens = 0;
  for (const i of order) {
    const n = batch[i].tokens.length;
    // Sorted ascending, so n is the group's padded length if i joins.
    if (current.length > 0 && n * (current.length + 1) > PADDING_SLACK * (realTokens + n)) {
      groups.push(current);
      current = [];
      realTokens = 0;
    }
    current.push(i);
    realTokens += n;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
