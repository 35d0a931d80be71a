// ModelRunner for Whisper (encoder-decoder): two sessions over one paged KV cache.
//
// A step first runs the encoder for the sequences that carry features (requests admitted this
// step, or re-admitted after preemption), batched, and copies each one's cross-attention K/V
// ([P, d] per decoder layer) into its cross blocks. Then the decoder runs exactly as the
// decoder-only graph runner does (all decodes in one run, each prefill chunk alone), gathering
// every sequence's cross blocks next to its self-attention past.

import * as ort from 'onnxruntime-node';
import { architectureOf, graphDtypeFor } from '../architectures/registry';
import { WhisperDecoderInputs } from '../graph/whisper-decoder-graph';
import { WhisperEncoderIO } from '../graph/whisper-encoder-graph';
import type { LoadedModel, ModelArchConfig, ModelRunner, StepSequence } from '../types';
import { encoderOf, type WhisperEncoderConfig } from '../whisper/whisper-config';
import { GraphRunner, type GraphRunnerOptions } from './graph-runner';
import { PagedKvCache } from './kv-cache';
import { createSession } from './session';

/**
 * Most encoder inputs in one encoder run. Each holds [heads, P, P] attention scores
 * (P = 1500: 54 MB per item for whisper-base), so a burst is encoded a few at a time.
 */
export const MAX_ENCODER_BATCH = 4;

export async function createWhisperRunner(model: LoadedModel, opts: GraphRunnerOptions): Promise<ModelRunner> {
  if (!model.weights) throw new Error('createWhisperRunner needs model weights');
  const { config, weights } = model;
  const linear = { keepQuantized: opts.keepQuantized ?? true, quantAccuracyLevel: opts.quantAccuracyLevel, dtype: graphDtypeFor(config, 'encoderDecoder', opts.dtype) };
  // Arena on for both sessions: without it every run allocates its buffers afresh (the encoder's
  // [heads, 1500, 1500] attention scores among them), seen as system CPU (whisper-tiny, bench:audio, interleaved runs:
  // encoder 336-355 ms -> 258-267 ms, 8 concurrent clips 1.07-1.21 -> 1.51-1.53 req/s, system CPU
  // 3.0-3.9 s -> 0.9 s, peak RSS +200 MiB). Arena on the encoder alone kept the decoder's cost
  // and grew peak RSS to 1.9-2.2 GiB (1.3 with no arena, 1.5 with both).
  const settings = { device: opts.device, intraOpThreads: opts.intraOpThreads, memoryArena: true };
  const builders = architectureOf(config).graphs;
  if (!builders.encoderDecoder) throw new Error(`architecture '${config.architecture}' has no encoder-decoder graphs`);
  const graphs = builders.encoderDecoder(config, weights, { ...linear, blockSize: opts.blockSize });
  const encoder = await createSession(graphs.encoder, settings);
  const decoder = await createSession(graphs.decoder, settings);
  return new WhisperRunner(config, new PagedKvCache(config, opts.blockSize, opts.numBlocks), decoder, encoder);
}

/** KV blocks one sequence's cross-attention K/V take. */
export function crossBlocksFor(config: ModelArchConfig, blockSize: number): number {
  return Math.ceil(encoderOf(config).numPositions / blockSize);
}

class WhisperRunner extends GraphRunner {
  private readonly encoderConfig: WhisperEncoderConfig;
  private readonly numCrossBlocks: number;

  constructor(
    config: ModelArchConfig,
    cache: PagedKvCache,
    decoder: ort.InferenceSession,
    private readonly encoder: ort.InferenceSession,
  ) {
    super(config, cache, decoder, config.maxPositionEmbeddings);
    this.encoderConfig = encoderOf(config);
    this.numCrossBlocks = crossBlocksFor(config, cache.blockSize);
  }

  override async dispose(): Promise<void> {
    await Promise.all([super.dispose(), this.encoder.release()]);
  }

  protected override async beforeGroups(batch: readonly StepSequence[]): Promise<void> {
    for (const seq of batch) this.checkCrossBlocks(seq);
    const pending = batch.filter((seq) => seq.encoder?.features);
    for (let at = 0; at < pending.length; at += MAX_ENCODER_BATCH) await this.encode(pending.slice(at, at + MAX_ENCODER_BATCH));
  }

  protected override groupFeeds(group: readonly StepSequence[]): Record<string, ort.Tensor> {
    const ids = new BigInt64Array(group.length * this.numCrossBlocks);
    group.forEach((seq, b) => seq.encoder!.blockTable.forEach((block, j) => (ids[b * this.numCrossBlocks + j] = BigInt(block))));
    return { [WhisperDecoderInputs.crossBlocks]: new ort.Tensor('int64', ids, [group.length, this.numCrossBlocks]) };
  }

  private checkCrossBlocks(seq: StepSequence): void {
    const table = seq.encoder?.blockTable;
    if (!table || table.length !== this.numCrossBlocks) {
      throw new Error(`an encoder-decoder step sequence needs ${this.numCrossBlocks} cross-attention blocks, got ${table?.length ?? 'none'}`);
    }
    for (const block of table) this.cache.block([block], 0); // throws for an id outside the cache
    const { numMelBins, numPositions } = this.encoderConfig;
    const features = seq.encoder?.features;
    if (features && features.length !== numMelBins * 2 * numPositions) {
      throw new Error(`encoder features have ${features.length} values, expected ${numMelBins} x ${2 * numPositions}`);
    }
  }

  /** Runs the encoder over `seqs` and writes their cross-attention K/V into their cross blocks. */
  private async encode(seqs: readonly StepSequence[]): Promise<void> {
    const { numMelBins, numPositions } = this.encoderConfig;
    const size = numMelBins * 2 * numPositions;
    const input = new Float32Array(seqs.length * size);
    seqs.forEach((seq, i) => input.set(seq.encoder!.features!, i * size));
    const feeds = { [WhisperEncoderIO.features]: new ort.Tensor('float32', input, [seqs.length, numMelBins, 2 * numPositions]) };
    const out = await this.encoder.run(feeds, [WhisperEncoderIO.crossKv]);
    // [2·L, B, heads, P', head_dim]: each (layer, K|V, sequence) is its cross blocks' contents, in order.
    const crossKv = out[WhisperEncoderIO.crossKv].data as Float32Array;
    const blockElems = this.cache.blockSize * this.cache.rowSize;
    const perSequence = this.numCrossBlocks * blockElems;
    for (let l = 0; l < this.config.numLayers; l++) {
      for (let kind = 0; kind < 2; kind++) {
        const cache = kind === 0 ? this.cache.float32().keys[l] : this.cache.float32().values[l];
        seqs.forEach((seq, i) => {
          const base = ((2 * l + kind) * seqs.length + i) * perSequence;
          seq.encoder!.blockTable.forEach((block, j) => {
            cache.set(crossKv.subarray(base + j * blockElems, base + (j + 1) * blockElems), block * blockElems);
          });
        });
      }
    }
  }
}
