// ModelRunner over the decoder graph built from weights (src/model/graph/decoder-graph.ts).
//
// Grouping: all single-token (decode) sequences of a step go into ONE run (ragged past lengths are
// padded and masked); each multi-token (prefill) chunk runs on its own, so prefill never pads
// other sequences to its length and decode batches stay dense.
import * as ort from 'onnxruntime-node';
import { architectureOf, graphDtypeFor } from '../architectures/registry';
import { DecoderInputs, DecoderOutputs } from '../graph/decoder-graph';
import { AccuracyLevel } from '../graph/matmul-nbits';
import { LoadedModel, ModelArchConfig, ModelRunner, RunnerOptions, StepResult, StepSequence } from '../types';
import { PagedKvCache } from './kv-cache';
import { PagedRunner } from './paged-runner';
import { createSession } from './session';
import { buildStepInputs, scatterNewKv } from './step-inputs';

export interface GraphRunnerOptions extends RunnerOptions {
  /** Keep GGML-quantized weights quantized in the graph (MatMulNBits); default true. */
  keepQuantized?: boolean;
  /** MatMulNBits accuracy_level: 0 = f32 activations (exact), 4 = int8 activations; default per format. */
  quantAccuracyLevel?: AccuracyLevel;
}

export async function createGraphRunner(model: LoadedModel, opts: GraphRunnerOptions): Promise<ModelRunner> {
  if (!model.weights) throw new Error('createGraphRunner needs model weights');
  const config = model.config;
  const maxPositions = Math.max(config.maxPositionEmbeddings, model.contextLength);
  const cache = new PagedKvCache(config, opts.blockSize, opts.numBlocks);
  const graphs = architectureOf(config).graphs;
  if (!graphs.causalLm) throw new Error(`${config.architecture} models do not generate text`);
  const dtype = graphDtypeFor(config, 'causalLm', opts.dtype);
  const built = graphs.causalLm(config, model.weights, {
    maxPositions,
    maxModelLen: opts.maxModelLen ?? model.contextLength,
    blockSize: opts.blockSize,
    keepQuantized: opts.keepQuantized ?? true,
    quantAccuracyLevel: opts.quantAccuracyLevel,
    dtype,
  });
  const session = await createSession(built, { device: opts.device, intraOpThreads: opts.intraOpThreads });
  return new GraphRunner(config, cache, session, maxPositions);
}

export class GraphRunner extends PagedRunner {
  protected readonly cacheFeeds: Record<string, ort.Tensor> = {};

  constructor(
    config: ModelArchConfig,
    cache: PagedKvCache,
    session: ort.InferenceSession,
    private readonly maxPositions: number,
  ) {
    super(config, cache, session);
    const dims = [cache.numBlocks, cache.blockSize * cache.rowSize];
    const { keys, values } = cache.float32();
    for (let l = 0; l < config.numLayers; l++) {
      this.cacheFeeds[DecoderInputs.cacheK(l)] = new ort.Tensor('float32', keys[l], dims);
      this.cacheFeeds[DecoderInputs.cacheV(l)] = new ort.Tensor('float32', values[l], dims);
    }
  }

  protected async runStep(batch: readonly StepSequence[]): Promise<StepResult> {
    await this.beforeGroups(batch);
    const vocab = this.config.vocabSize;
    const logits = new Float32Array(batch.length * vocab);
    const allLogits: (Float32Array | null)[] = batch.map(() => null);
    const decode = batch.map((_, i) => i).filter((i) => batch[i].tokens.length === 1);
    const groups = [decode, ...batch.map((_, i) => i).filter((i) => batch[i].tokens.length !== 1).map((i) => [i])];
    for (const indices of groups) {
      if (indices.length === 0) continue;
      const group = indices.map((i) => batch[i]);
      const out = await this.runGroup(group);
      indices.forEach((i, g) => {
        const { first, count } = out.at[g];
        const rows = out.logits.subarray(first * vocab, (first + count) * vocab);
        logits.set(rows.subarray((count - 1) * vocab), i * vocab);
        if (batch[i].allLogits) allLogits[i] = rows;
      });
    }
    return { logits, allLogits };
  }

  private async runGroup(group: readonly StepSequence[]): Promise<{ logits: Float32Array; at: { first: number; count: number }[] }> {
    const inp = buildStepInputs(group, this.cache, this.maxPositions);
    const feeds: Record<string, ort.Tensor> = {
      ...this.cacheFeeds,
      [DecoderInputs.inputIds]: new ort.Tensor('int64', inp.inputIds, [inp.batch, inp.seq]),
      [DecoderInputs.positionIds]: new ort.Tensor('int64', inp.positionIds, [inp.batch, inp.seq]),
      [DecoderInputs.pastBlocks]: new ort.Tensor('int64', inp.pastBlockIds, [inp.batch, inp.pastBlocks]),
      [DecoderInputs.attnMask]: new ort.Tensor('bool', inp.attnMask, [inp.batch, 1, inp.seq, inp.pastBlocks * this.blockSize + inp.seq]),
      [DecoderInputs.logitsRows]: new ort.Tensor('int64', inp.logitsRows, [inp.logitsRows.length]),
      ...this.groupFeeds(group),
    };
    const result = await this.session.run(feeds);
    scatterNewKv(this.cache, result[DecoderOutputs.newKv].data as Float32Array, inp.newSlots, inp.seq);
    return { logits: result[DecoderOutputs.logits].data as Float32Array, at: inp.logitsAt };
  }

  /** Work a step needs before its decoder runs (an encoder-decoder model's encoder). */
  protected async beforeGroups(_batch: readonly StepSequence[]): Promise<void> {}

  /** Inputs a decoder graph takes besides the decoder-only ones. */
  protected groupFeeds(_group: readonly StepSequence[]): Record<string, ort.Tensor> {
    return {};
  }
}
