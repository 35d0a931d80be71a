// The pooling forward of --dtype bfloat16 (pooling-runner.ts packs the runs): a BERT-style
// encoder cut by graph/encoder-segments.ts, its linears in the addon's AVX512-BF16 GEMM
// (native/src/bf16-gemm.cc: weights rounded to bfloat16 once here, activations per call, float32
// sums, bias and activation fused) with the residual add + LayerNorms, each layer's self-attention
// on the same tiles (native/src/bf16-encoder-attention.cc: each sequence over its own length's keys,
// from the fused QKV rows straight into the context rows). The embeddings (table rows added here,
// the addon's addLayerNorm) and the pooling (poolRows) run here too; onnxruntime runs only a
// classifier head (cross-encoders), pooling included. Activation buffers are kept between runs.
//
// Refused at startup, with the reason, where it cannot run: another device, an architecture
// without pooling segments, no addon, or a CPU without AVX512-BF16 (vLLM's CPU backend also
// needs it for bfloat16 matmuls). `auto` stays float32: bfloat16 moves embeddings (cosine to
// float32's 1 - 1e-6 on the bench model, a few 1e-6 on the tests').
//
// Figures (runner alone, served, where a forward goes) and what was measured and not taken:
// docs/perf/embeddings.md.
import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import { architectureOf, BFLOAT16_SCOPE } from '../architectures/registry';
import { EncoderSegmentNames, type EncoderEmbeddingTables, type EncoderLayerWeights, type EncoderLinear, type LayerNormWeights } from '../graph/encoder-segments';
import { PoolingInputs, PoolingOutputs } from '../graph/pooling-graph';
import type { EncoderArchConfig, LoadedModel } from '../types';
import { BF16_ACTIVATION, nativeKernels, nativeKernelsUnavailable, type NativeKernels } from './native-kernels';
import type { PaddedBatch, PoolingForward } from './pooling-runner';
import { SyncSession, type SessionSettings } from './session';

/** A linear packed for bf16Gemm, with its float32 bias. */
interface PackedLinear {
  packed: Uint16Array;
  bias: Float32Array;
  n: number;
  k: number;
}

interface PackedLayer {
  qkv: PackedLinear;
  output: PackedLinear;
  attentionNorm: LayerNormWeights;
  up: PackedLinear;
  down: PackedLinear;
  outputNorm: LayerNormWeights;
}

export function createBf16Forward(model: LoadedModel, settings: SessionSettings): PoolingForward {
  const config = model.config as EncoderArchConfig;
  const refuse = (why: string) => new Error(`--dtype bfloat16: ${why}; ${BFLOAT16_SCOPE}`);
  const graphs = architectureOf(config).graphs;
  if (!graphs.poolingSegments || !model.weights) throw refuse(`${config.architecture} pooling graphs have no bfloat16 path`);
  if (settings.device !== 'cpu') throw refuse(`--device ${settings.device} has no bfloat16 path`);
  const native = nativeKernels();
  if (!native) throw refuse(`the native addon is unavailable (${nativeKernelsUnavailable()})`);
  if (!native.bf16Available) throw refuse('this CPU has no AVX512-BF16');
  const segments = graphs.poolingSegments(config, model.weights, model.output);
  const pack = (w: EncoderLinear): PackedLinear => ({ packed: native.bf16Pack(w.weight, w.n, w.k), bias: w.bias, n: w.n, k: w.k });
  const layers: PackedLayer[] = [];
  for (let l = 0; l < config.numLayers; l++) {
    const w: EncoderLayerWeights = segments.layer(l);
    layers.push({ qkv: pack(w.qkv), output: pack(w.output), attentionNorm: w.attentionNorm, up: pack(w.up), down: pack(w.down), outputNorm: w.outputNorm });
  }
  // Unset (or 0) intra-op threads means every core, as onnxruntime's default.
  native.setThreads(settings.intraOpThreads || availableParallelism());
  const head = segments.pool ? SyncSession.create(segments.pool, settings) : null;
  return new Bf16Forward(config, native, segments.embeddings, head, layers);
}

/**
 * Grow-only activation buffers kept between runs: a fresh Float32Array per activation per run is
 * zero-filled and, above malloc's mmap threshold, page-faulted in again every run. Runs needing
 * more than KEPT_SCRATCH_FLOATS in one buffer (long single inputs) get fresh arrays, which are
 * not kept, so a rare long input does not hold its activations' memory for good.
 */
const KEPT_SCRATCH_FLOATS = 4 * 2 ** 20;

class Scratch {
  private readonly kept = new Map<string, Float32Array>();

  take(name: string, length: number): Float32Array {
    if (length > KEPT_SCRATCH_FLOATS) return new Float32Array(length);
    let buffer = this.kept.get(name);
    if (!buffer || buffer.length < length) {
      buffer = new Float32Array(length);
      this.kept.set(name, buffer);
    }
    return buffer.subarray(0, length);
  }
}

class Bf16Forward implements PoolingForward {
  private readonly activation: number;
  private readonly attentionScale: number;
  private readonly scratch = new Scratch();

  constructor(
    private readonly config: EncoderArchConfig,
    private readonly native: NativeKernels,
    private readonly tables: EncoderEmbeddingTables,
    /** Pooling + classifier head in onnxruntime (models with a head); null: pooled here. */
    private readonly head: SyncSession | null,
    private readonly layers: readonly PackedLayer[],
  ) {
    this.activation = BF16_ACTIVATION[config.hiddenAct];
    this.attentionScale = 1 / Math.sqrt(config.hiddenSize / config.numHeads);
  }

  run(inputs: PaddedBatch): Float32Array {
    const { native, config, scratch } = this;
    const rows = inputs.batch * inputs.seq;
    const h = config.hiddenSize;
    // x: the layer's input rows; a: the rows after attention (each LayerNorm writes in place of its residual).
    const x = scratch.take('x', rows * h);
    this.embed(inputs, x);
    const qkv = scratch.take('qkv', rows * 3 * h);
    const projected = scratch.take('projected', rows * h);
    const inner = scratch.take('inner', rows * config.intermediateSize);
    const a = scratch.take('a', rows * h);
    const context = scratch.take('context', rows * h);
    const gemm = (w: PackedLinear, input: Float32Array, out: Float32Array, act: number = BF16_ACTIVATION.none) =>
      native.bf16Gemm(w.packed, input, w.bias, out, rows, w.n, w.k, act);
    for (const layer of this.layers) {
      gemm(layer.qkv, x, qkv);
      native.bf16EncoderAttention(qkv, inputs.lengths, context, inputs.seq, config.numHeads, this.attentionScale);
      gemm(layer.output, context, projected);
      native.addLayerNorm(projected, x, layer.attentionNorm.gamma, layer.attentionNorm.beta, a, config.layerNormEps);
      gemm(layer.up, a, inner, this.activation);
      gemm(layer.down, inner, projected);
      native.addLayerNorm(projected, a, layer.outputNorm.gamma, layer.outputNorm.beta, x, config.layerNormEps);
    }
    if (!this.head) return poolRows(x, inputs.weights, inputs.batch, inputs.seq, h);
    const dims = [inputs.batch, inputs.seq];
    return this.head.run({
      [EncoderSegmentNames.hidden]: new ort.Tensor('float32', x, [rows, h]),
      [PoolingInputs.poolWeights]: new ort.Tensor('float32', inputs.weights, dims),
    })[PoolingOutputs.pooled].data as Float32Array;
  }

  async release(): Promise<void> {
    await this.head?.release();
  }

  /** x = LayerNorm(word[id] + position[i] + type[t]) per position, as encoder-graph.ts's embeddings (EncoderEmbeddingTables). */
  private embed(inputs: PaddedBatch, x: Float32Array): void {
    const { word, position, positions, typeDeltas, norm } = this.tables;
    const h = this.config.hiddenSize;
    const { batch, seq } = inputs;
    const vocab = word.length / h;
    if (seq > positions) throw new Error(`a sequence of ${seq} tokens is longer than the model's ${positions} positions`);
    const tokens = this.scratch.take('tokens', x.length);
    const placed = this.scratch.take('positions', x.length);
    const sequencePositions = position.subarray(0, seq * h);
    for (let b = 0, r = 0; b < batch; b++) {
      placed.set(sequencePositions, r * h);
      for (let i = 0; i < seq; i++, r++) {
        const id = Number(inputs.ids[r]);
        if (!(id >= 0 && id < vocab)) throw new Error(`token id ${id} is outside the vocabulary (0..${vocab - 1})`);
        tokens.set(word.subarray(id * h, id * h + h), r * h);
        const type = typeDeltas ? Number(inputs.types[r]) : 0;
        if (type !== 0) addInto(placed, r * h, typeDeltas!, type * h, h);
      }
    }
    this.native.addLayerNorm(tokens, placed, norm.gamma, norm.beta, x, this.config.layerNormEps);
  }
}

/** pooled[b] = Σ_i weights[b, i] · x[b·seq + i] ([batch, h] from [batch·seq, h]; padding has weight 0). */
export function poolRows(x: Float32Array, weights: Float32Array, batch: number, seq: number, h: number): Float32Array {
  const pooled = new Float32Array(batch * h);
  const sum = new Float64Array(h);
  for (let b = 0; b < batch; b++) {
    sum.fill(0);
    for (let i = 0; i < seq; i++) {
      const w = weights[b * seq + i];
      if (w === 0) continue;
      const at = (b * seq + i) * h;
      for (let j = 0; j < h; j++) sum[j] += w * x[at + j];
    }
    pooled.set(sum, b * h);
  }
  return pooled;
}

function addInto(out: Float32Array, at: number, table: Float32Array, from: number, width: number): void {
  if (from < 0 || from + width > table.length) throw new Error(`token type row ${from / width} is outside the model's token types`);
  for (let j = 0; j < width; j++) out[at + j] += table[from + j];
}
