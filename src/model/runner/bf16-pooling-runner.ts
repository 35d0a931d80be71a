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
// Measured (issue 15; the MiniLM-shaped bench BERT, 6 layers, hidden 384, FFN 1536; shared 2-core
// Zen 5):
// - Runner alone against the float32 runner and the transformers.js export (`THREADS=1,2
//   DTYPES=float32,bfloat16 REPS=20 node dist/bench/embed-forward.js`, load average ~7, best wall /
//   CPU ms): one thread 1x16 3.67 / 3.67 -> 1.88 / 1.89, 8x16 14.6 -> 8.2 / 7.9, 32x16 50.2 -> 30.8
//   / 29.5, 1x128 15.3 -> 9.0 / 8.7, 16x128 218 -> 136; two threads (the second core mostly held
//   by other sessions) 1x16 2.17 / 4.18 -> 2.30 / 2.31, 32x16 30.6 / 56.3 -> 20.4 / 32.5, 16x128
//   126 / 236 -> 77 / 137. CPU per sequence about halves everywhere.
// - Where a forward goes (one thread, timers around each call, mean of 50 runs, load ~2.2): 1x16
//   1.28 ms = the GEMMs 1.01, the six attention runs 0.15, embed 0.03, pool 0.02, LayerNorms 0.03;
//   1x128 8.06 ms = GEMMs 6.37 (~425 GFLOP/s), attention 1.27, LayerNorms 0.16, embed 0.11, pool
//   0.03. At 16 rows the GEMMs stream the 21 MB of bfloat16 weights from memory (~21 GB/s).
// - Attention: first an AVX-512 float32 kernel per sequence and head (keys transposed, 4 x 16 keys'
//   scores per step, softmax with exp512, 4-way unrolled p-weighted value rows) was measured and
//   not taken: runner alone, interleaved, two rounds, best wall ms, one thread, 1x16 1.33-1.45
//   against onnxruntime's 1.50-1.68, 1x128 9.2-10.5 against 7.9-8.6, 16x128 147-155 against
//   117-137 (onnxruntime's Attention blocks several queries per key load, that kernel did not).
//   Taken: QK^T and PV as bfloat16 GEMMs on the linears' register tiles (4 queries x 64 keys per
//   tile, then 4 queries x the head's dims), no mask (keys past a sequence's length are never
//   scored), no Split/transpose/output copies. Runner alone against the attention session
//   (`SHAPES=1x16,32x16,1x128,16x128 THREADS=1,2 DTYPES=bfloat16 REPS=20 node
//   dist/bench/embed-forward.js`, the two builds interleaved, two rounds, load ~3, best wall / CPU
//   ms): one thread 1x16 1.45-1.53 -> 1.29-1.31, 32x16 27.9-28.0 -> 25.9-27.1, 1x128 7.86-7.94 ->
//   7.51-8.00, 16x128 120-121 -> 112-113; two threads 1x16 1.61-1.62 -> 1.29-1.32, 1x128 7.1-8.3 /
//   8.6-8.9 -> 5.5 / 8.2, 16x128 72-74 / 129-132 -> 65-69 / 114-118. perf of a 32x128 forward, one
//   thread, after: GEMM tiles of the linears ~75%, attention ~12% (softmax 4.4, its tiles ~6,
//   packing K and V 1.5), convertRow 2.6, LayerNorms 2.0; onnxruntime's embed and pool ~1.
//   Embeddings against transformers.js: least cosine 0.999999 before and after (largest
//   difference 2.65e-4 -> 2.83e-4).
// - Served, `BENCH_EMBED_DTYPES=float32,bfloat16 npm run bench:embed` (each cell float32, bfloat16
//   and transformers.js float32 alternating, best of 3; load average ~3), embeddings/s float32 ->
//   bfloat16 (ortllm / transformers.js), server CPU ms per embedding:
//     16 tokens   c1 216 -> 280 (0.55 -> 0.71)  6.88 -> 3.75;  c8 445 -> 641 (0.58 -> 0.84)  3.75 -> 2.50;
//                 c32 611 -> 809 (0.67 -> 0.88)  2.97 -> 1.88
//     128 tokens  c1 93.6 -> 108 (0.89 -> 1.02)  18.8 -> 12.5; c8 119 -> 172 (1.08 -> 1.56)  16.3 -> 10.0;
//                 c32 119 -> 172 (1.22 -> 1.76)  15.8 -> 10.0
//   An earlier pair of runs on a busier machine (load 3-5, transformers.js slower): 16 tokens c1 144
//   -> 270 (0.56 -> 1.06), c8 257 -> 410, c32 364 -> 670 (0.85 -> 1.57); 128 tokens c1 45.5 -> 83.3,
//   c8 49.1 -> 97.2, c32 117 -> 177 (1.28 -> 1.93). At 16 tokens the rest of a request (HTTP,
//   tokenizer, the hop to the engine worker: ~1 ms of server CPU per embedding at c32, ~2 at c1)
//   now outweighs the forward.
// - The attention kernel served (`BENCH_EMBED_DTYPES=float32,bfloat16 BENCH_EMBED_REPEATS=2
//   BENCH_EMBED_ROUNDS=4 node dist/bench/embed.js`, the build before and after alternating, two runs
//   each, load ~3), bfloat16 ortllm / transformers.js and server CPU ms per embedding, before ->
//   after: 128 tokens c32 1.88, 1.90 -> 2.10, 2.05 (9.22, 9.45 -> 8.59, 8.59), c8 1.51, 1.53 ->
//   1.55, 1.46 (10.3, 9.7 -> 9.1, 9.4), c1 1.18, 1.06 -> 1.08, 1.20 (10.6, 11.9 -> 10.6, 10.6);
//   16 tokens c1 0.88, 0.77 -> 0.83 (and 2.42 in a run where transformers.js fell to 130/s), c32
//   0.97, 0.92 -> 0.93, 1.01 (1.88, 2.03 -> 1.80, 1.72). 128 tokens c32 alone (REPEATS=3 ROUNDS=8,
//   two rounds): 1.84, 1.89 -> 2.01, 2.00, CPU 9.45, 9.41 -> 8.75, 8.83; 16 tokens c1 alone
//   (REPEATS=3 ROUNDS=150, two rounds, load ~2.4): 0.72, 0.78 -> 0.89, 0.90, CPU 3.40, 3.07 ->
//   2.40, 2.60 (six onnxruntime runs fewer per forward). float32 unchanged (16
//   tokens, 300-request rounds, interleaved: c1 287, 263 -> 285, 273/s; c32 865, 755 -> 806, 828).
// - Where a served 16-token c1 request's CPU goes after (perf, 1,500 requests, 2.8 ms of server
//   CPU each): the engine worker ~1.3 ms (the forward ~1.1, the engine's own JS ~0.05), the HTTP
//   thread ~1.0 (spread over Fastify/Nest routing, hooks, body parsing, class-validator, the
//   tokenizer, metrics, JSON serialization and socket writes, none above ~5% of it), V8's helper
//   threads ~0.4, the load generator 0.45 on the same cores.
// - Not taken: the embed and pool sessions on one intra-op thread (no pool wake-up or spin for their
//   small graphs). Runner alone, two threads, interleaved, two rounds, CPU ms per forward: 1x16
//   1.22, 1.19 -> 1.16, 1.15 (wall 1.15-1.17 either way), 32x16 29.7, 28.7 -> 29.9, 29.0, 16x128
//   122, 134 -> 119, 118 with wall 68, 95 -> 94, 119: ~0.05 ms of CPU at 16 tokens for a slower
//   wall at 128.
// - The embeddings and pooling out of onnxruntime (they were two small sessions, woken at each end
//   of every forward) and the activation buffers kept between runs: runner alone (`SHAPES=1x16,32x16
//   THREADS=1,2 DTYPES=bfloat16 REPS=60 node dist/bench/embed-forward.js`, before and after
//   interleaved, two rounds, load ~3), best wall ms: two threads 1x16 1.49, 1.52 -> 1.33, 1.37;
//   one thread 1x16 1.29, 1.41 -> 1.36, 1.43 and 32x16 27.2, 28.7 -> 28.7, 29.1 (within the noise).
//   Served, a c1 16-token request's profile had the two sessions' runs at ~0.25 ms of the
//   worker's 1.6-1.8 ms.
import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import { architectureOf, BFLOAT16_SCOPE } from '../architectures/registry';
import { EncoderSegmentNames, type EncoderEmbeddingTables, type EncoderLayerWeights, type EncoderLinear, type LayerNormWeights } from '../graph/encoder-segments';
import { PoolingInputs, PoolingOutputs } from '../graph/pooling-graph';
import type { EncoderArchConfig, LoadedModel } from '../types';
import { BF16_ACTIVATION, nativeAttention, nativeAttentionUnavailable, type NativeAttention } from './native-attention';
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
  const native = nativeAttention();
  if (!native) throw refuse(`the native addon is unavailable (${nativeAttentionUnavailable()})`);
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
    private readonly native: NativeAttention,
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
