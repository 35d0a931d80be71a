// ModelRunner over the decoder cut at its attention (graph/decoder-segments.ts): one ONNX session
// per segment, and the native paged-attention kernel (native-kernels.ts) between them, reading
// each sequence's past K/V in place from the paged cache.
//
// A step packs every scheduled token into one set of rows — prefill chunks of several sequences
// and all decodes together, no padding — because everything but attention is row-wise; the
// kernel gets each sequence's rows, past length and block table. So prefill chunks of many
// requests run as one batch, and a decode step's cost grows with the tokens actually cached, not
// with a padded or gathered copy of them.
//
// At one sequence a step is onnxruntime-node's per-run overhead more than compute (what one run
// costs: session.ts); on an AVX512-VNNI or AVX2 CPU a llama-family model whose linears are all
// Q8_0 runs them, RoPE, SwiGLU and its RMSNorms in the addon (graph/q8-linear-segments.ts), so its
// steps run no onnxruntime session. Figures, and what was measured and not taken:
// docs/perf/segmented-runner.md. Small float32 models (hidden size up to 128: stories260K) run
// wholly in the addons too, their linears in float32 (small-decoder.ts, native/src/f32-decoder.cc).
import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import { architectureOf, graphDtypeFor } from '../architectures/registry';
import { SegmentInputs, SegmentOutputs, segmentParts, type SegmentedDecoder } from '../graph/decoder-segments';
import type { Q8Layer, Q8Linears, Q8Weight, RmsNorms } from '../graph/q8-linear-segments';
import type { AccuracyLevel } from '../graph/matmul-nbits';
import type { LoadedModel, ModelArchConfig, ModelWeights, RunnerOptions, StepResult, StepSequence, WeightTensor } from '../types';
import { EmbeddingRows } from './embedding-rows';
import { PagedKvCache } from './kv-cache';
import { KV_STORAGE } from './kv-dtype';
import type { NativeKernels } from './native-kernels';
import { PagedRunner, type Releasable } from './paged-runner';
import { joinPasses, splitRows } from './row-passes';
import { SyncSession } from './session';
import { f32Addon, pickRows, SmallDecoder, smallDecoderApplies } from './small-decoder';

export interface SegmentedRunnerOptions extends RunnerOptions {
  keepQuantized?: boolean;
  quantAccuracyLevel?: AccuracyLevel;
  /** Rows one pass through the layers takes at most (MAX_PASS_ROWS; see there). */
  maxPassRows?: number;
}

/**
 * A step of more rows runs as several passes through the layers (row-passes.ts), as llama.cpp
 * splits its batch into micro-batches of n_ubatch = 512 tokens: each pass's activations (ORT's
 * intermediates and the output copies, ~100 KB per row on the 1.1B shape) exist only during
 * that pass. Figures in docs/perf/segmented-runner.md.
 */
const MAX_PASS_ROWS = 512;

/**
 * How long the addon's pool spins between calls on the Q8_0 path, whose step is all addon calls
 * (~100 a step at batch 1, tens of microseconds apart): a futex wake-up per call cost about what
 * splitting it saved. Elsewhere onnxruntime's threads run between the calls and need the cores
 * (docs/perf/thread-pool.md has the figures of both, and of 32 streams, where it pays too).
 */
const Q8_POOL_SPIN_MICROS = 100;

/** The native kernel's limits (native/src/attention.cc: kMaxHeadDim, kMaxQueries). */
const MAX_HEAD_DIM = 256;
const MAX_GROUP = 32;

/** True when the model's architecture can run segmented (causalLmSegments) within the kernel's limits. */
export function canRunSegmented(model: LoadedModel): boolean {
  const c = model.config;
  return (
    model.weights !== null &&
    architectureOf(c).graphs.causalLmSegments !== undefined &&
    c.headDim <= MAX_HEAD_DIM &&
    c.numHeads % c.numKvHeads === 0 &&
    c.numHeads / c.numKvHeads <= MAX_GROUP
  );
}

export async function createSegmentedRunner(model: LoadedModel, opts: SegmentedRunnerOptions, native: NativeKernels): Promise<SegmentedRunner> {
  const graphs = architectureOf(model.config).graphs;
  if (!model.weights || !graphs.causalLmSegments) throw new Error(`${model.config.architecture} models cannot run segmented`);
  const config = model.config;
  const maxPositions = Math.max(config.maxPositionEmbeddings, model.contextLength);
  const weights = new ReadWeights(model.weights);
  const decoder = graphs.causalLmSegments(config, weights, {
    maxPositions,
    keepQuantized: opts.keepQuantized ?? true,
    quantAccuracyLevel: opts.quantAccuracyLevel,
    dtype: graphDtypeFor(config, 'causalLmSegments', opts.dtype),
    // A CUDA session keeps the linears on the device.
    q8Linears: opts.device === 'cpu' && native.q8Available && opts.nativeQ8Gemm !== false,
  });
  // Choosing the segments looked at the linears' formats: that is not a segment's read.
  weights.forgetReads();
  const cache = new PagedKvCache(config, opts.blockSize, opts.numBlocks, opts.kvCacheDtype ?? 'float32');
  const addon = opts.device === 'cpu' && !decoder.q8Linears && opts.smallDecoder !== false ? f32Addon() : null;
  const smallApplies = addon !== null && graphDtypeFor(config, 'causalLmSegments', opts.dtype) === 'float32' && smallDecoderApplies(config, weights, addon);
  // Looking at the weights' formats is not a read to release.
  weights.forgetReads();
  const small =
    addon && smallApplies
      ? new SmallDecoder(config, weights, addon, native, decoder.rope, () => {
          if (opts.consumeWeights) weights.releaseRead(decoder.embeddingName);
        })
      : null;
  const sessions: SyncSession[] = [];
  try {
    // One segment at a time: only one segment's transient weight copies exist at once.
    for (let i = 0; i < (small ? 0 : decoder.count); i++) {
      sessions.push(SyncSession.create(decoder.build(i), { device: opts.device, intraOpThreads: opts.intraOpThreads }));
      // The session holds its own copy now; the embedding table is still read per step.
      if (opts.consumeWeights) weights.releaseRead(decoder.embeddingName);
    }
  } catch (err) {
    await Promise.all(sessions.map((s) => s.release()));
    throw err;
  }
  const linears = decoder.q8Linears ? packQ8Linears(decoder.q8Linears, config.numLayers, native, weights, opts.consumeWeights ? decoder.embeddingName : null) : null;
  const embedding = new EmbeddingRows(model.weights, decoder.embeddingName, config, opts.embeddingFileMinBytes);
  // Rows read from the model file: the loaded table is not needed either (embedding-rows.ts).
  if (opts.consumeWeights && embedding.fileBacked) model.weights.release?.(decoder.embeddingName);
  // Unset (or 0) intra-op threads means ORT's default, every core: attention gets as many.
  native.setThreads(opts.intraOpThreads || availableParallelism(), linears ? Q8_POOL_SPIN_MICROS : 0);
  return new SegmentedRunner(config, cache, sessions, native, embedding, decoder.rope, maxPositions, opts.maxPassRows ?? MAX_PASS_ROWS, linears, small);
}

/** Q8_0 weights packed for the addon's GEMM (q8-linear-segments.ts), with their sizes. */
interface PackedQ8 {
  packed: Uint8Array;
  n: number;
  k: number;
}

interface Q8Layers {
  layers: Q8Layer<PackedQ8>[];
  head: PackedQ8;
  norms: RmsNorms;
}

/** Packs every layer's linears and the head; with `release`, drops each layer's tensors once packed (keeping `release`, the embedding). */
function packQ8Linears(linears: Q8Linears, numLayers: number, native: NativeKernels, weights: ReadWeights, release: string | null): Q8Layers {
  const pack = (w: Q8Weight): PackedQ8 => ({ packed: native.q8Pack(w.codes, w.scales, w.n, w.k), n: w.n, k: w.k });
  const layers: Q8Layers['layers'] = [];
  for (let l = 0; l < numLayers; l++) {
    const w = linears.layer(l);
    layers.push({ q: pack(w.q), k: pack(w.k), v: pack(w.v), o: pack(w.o), gateUp: pack(w.gateUp), down: pack(w.down) });
    if (release) weights.releaseRead(release);
  }
  const head = pack(linears.head());
  if (release) weights.releaseRead(release);
  return { layers, head, norms: linears.norms };
}

/** The model's weights, remembering which tensors a segment's build read (to release them after). */
class ReadWeights implements ModelWeights {
  private readonly read = new Set<string>();

  constructor(private readonly weights: ModelWeights) {}

  names(): string[] {
    return this.weights.names();
  }

  has(name: string): boolean {
    return this.weights.has(name);
  }

  get(name: string): WeightTensor {
    this.read.add(name);
    return this.weights.get(name);
  }

  /** Forgets the reads so far (they were looks, not a segment's build). */
  forgetReads(): void {
    this.read.clear();
  }

  /** Releases from the model every tensor read since the last call, but `keep`. */
  releaseRead(keep: string): void {
    for (const name of this.read) if (name !== keep) this.weights.release?.(name);
    this.read.clear();
  }
}

/** Where the step's rows come from and go to. */
interface PackedStep {
  rows: number;
  positions: Int32Array;
  tokens: Int32Array;
  /** Per sequence: first row, row count, past length, table offset (the kernel's `seqs`). */
  seqInfo: Int32Array;
  tables: Int32Array;
  slots: Int32Array;
  /** Rows whose logits are returned, and per sequence where its rows start among them. */
  logitsRows: BigInt64Array;
  logitsAt: { first: number; count: number }[];
}

/** What runs a step's layers: onnxruntime segments, the addon's Q8_0 path, or the small float32 path (small-decoder.ts). */
export type SegmentedPath = 'segments' | 'q8' | 'small-f32';

export class SegmentedRunner extends PagedRunner<Releasable> {
  readonly path: SegmentedPath;
  private readonly dims: Int32Array;
  private readonly scale: number;
  private readonly kvCode: number;
  private rowPositions = new BigInt64Array(0);
  /**
   * The head's output of single-pass steps, reused from step to step (StepResult: valid until the
   * next step). A new 4 MB array a step (batch 32, vocab 32000), left to the collector, made the
   * worker scavenge every ~8 steps for "external memory pressure" (0.5-6 ms each, with V8's
   * helper threads taking the cores from the step's), and zeroing it cost more. Holds at most
   * max-num-seqs x vocab floats; figures in docs/perf/segmented-runner.md.
   */
  private headOut = new Float32Array(0);

  constructor(
    config: ModelArchConfig,
    cache: PagedKvCache,
    private readonly sessions: SyncSession[],
    private readonly native: NativeKernels,
    private readonly embedding: EmbeddingRows,
    private readonly rope: SegmentedDecoder['rope'],
    private readonly maxPositions: number,
    private readonly maxPassRows: number,
    private readonly q8: Q8Layers | null = null,
    private readonly small: SmallDecoder | null = null,
  ) {
    // The Q8_0 path has no sessions (q8-linear-segments.ts): the base releases them all, whichever there are.
    super(config, cache, { release: async () => void (await Promise.all(sessions.map((s) => s.release()))) });
    this.kvCode = KV_STORAGE[cache.dtype].nativeCode;
    this.dims = Int32Array.from([config.numHeads, config.numKvHeads, config.headDim, cache.blockSize, this.kvCode]);
    this.scale = 1 / Math.sqrt(config.headDim);
    this.path = q8 ? 'q8' : small ? 'small-f32' : 'segments';
  }

  override async dispose(): Promise<void> {
    this.embedding.close();
    await super.dispose();
  }

  /** Synchronous inside (SyncSession runs and the kernel); a throw still rejects PagedRunner.step. */
  protected runStep(batch: readonly StepSequence[]): Promise<StepResult> {
    const rows = batch.reduce((n, s) => n + s.tokens.length, 0);
    if (rows <= this.maxPassRows) return Promise.resolve(this.runPass(batch, this.pack(batch), true));
    const passes = splitRows(batch, this.maxPassRows);
    // Every pass is packed (its positions and blocks checked) before the first one writes the cache.
    const packed = passes.map((pass) => this.pack(pass.batch));
    // Each pass's logits live until joinPasses: none of them may share the reused head buffer.
    const results = passes.map((pass, i) => this.runPass(pass.batch, packed[i], false));
    return Promise.resolve(joinPasses(batch, passes, results, this.config.vocabSize));
  }

  /** `reuseHead`: the head may write into the buffer kept across steps (only when no other pass's result is alive). */
  private runPass(batch: readonly StepSequence[], step: PackedStep, reuseHead: boolean): StepResult {
    // Only one row per sequence goes to the kept buffer: it stays max-num-seqs x vocab at most (a
    // prompt_logprobs step's rows get their own, freed by the collector).
    if (this.q8) return this.logitsOf(batch, step, this.runQ8Pass(step, this.q8, reuseHead && step.logitsRows.length === batch.length));
    if (this.small) return this.logitsOf(batch, step, this.runSmallPass(step, this.small, reuseHead && step.logitsRows.length === batch.length));
    const c = this.config;
    const n = step.rows;
    const rope = this.ropeFeeds(step.positions);
    let hidden = this.embedding.rows(step.tokens);
    const qDim = c.numHeads * c.headDim;
    const attn = new Float32Array(n * qDim);
    const attnTensor = new ort.Tensor('float32', attn, [n, qDim]);
    // Each run's outputs are new buffers (onnxruntime-node copies them out); they are freed as
    // soon as they are dead rather than left to the collector (docs/perf/segmented-runner.md, "Memory").
    for (let l = 0; l < c.numLayers; l++) {
      const feeds: Record<string, ort.Tensor> = { ...rope, [SegmentInputs.hidden]: new ort.Tensor('float32', hidden, [n, c.hiddenSize]) };
      if (l > 0) feeds[SegmentInputs.attn] = attnTensor;
      const packed = this.sessions[l].run(feeds)[SegmentOutputs.packed].data as Float32Array;
      const out = segmentParts(c, packed, n);
      if (l > 0) {
        // The run consumed the previous residual: its buffer (the previous packed output, or the embedded rows) is dead.
        this.native.free(hidden);
        hidden = out.residual;
      }
      const k = this.cache.keys[l];
      const v = this.cache.values[l];
      this.native.writeKv(out.k, out.v, k, v, step.slots, this.kvCode);
      this.native.attention(out.q, attn, k, v, step.seqInfo, step.tables, this.dims, this.scale);
      // q, k and v are dead now; from segment 1 their buffer holds the residual too, freed after the next run.
      if (l === 0) this.native.free(packed);
    }
    const last = this.sessions[c.numLayers].run({
      [SegmentInputs.hidden]: new ort.Tensor('float32', hidden, [n, c.hiddenSize]),
      [SegmentInputs.attn]: attnTensor,
      [SegmentInputs.logitsRows]: new ort.Tensor('int64', step.logitsRows, [step.logitsRows.length]),
    });
    this.native.free(hidden, attn);
    return this.logitsOf(batch, step, last[SegmentOutputs.logits].data as Float32Array);
  }

  /** The result from the head's output `all` ([picked rows, vocab]). */
  private logitsOf(batch: readonly StepSequence[], step: PackedStep, all: Float32Array): StepResult {
    const vocab = this.config.vocabSize;
    if (step.logitsRows.length === batch.length) {
      // One row per sequence (every decode step): the head's output is the result as it is, with
      // no vocab-sized copy per sequence (4 MiB a step at batch 32 and vocab 32000).
      return { logits: all, allLogits: batch.map((s, i) => (s.allLogits ? all.subarray(i * vocab, (i + 1) * vocab) : null)) };
    }
    const logits = new Float32Array(batch.length * vocab);
    const allLogits: (Float32Array | null)[] = batch.map((s, i) => {
      const { first, count } = step.logitsAt[i];
      const rows = all.subarray(first * vocab, (first + count) * vocab);
      logits.set(rows.subarray((count - 1) * vocab), i * vocab);
      return s.allLogits ? rows : null;
    });
    if (allLogits.every((rows) => rows === null) && all.buffer !== this.headOut.buffer) this.native.free(all);
    return { logits, allLogits };
  }

  /**
   * A pass wholly in the addon (q8-linear-segments.ts): the linears, RoPE, the SwiGLU, and the
   * RMSNorms with their residual adds. Returns the head's [picked, vocab] output.
   */
  private runQ8Pass(step: PackedStep, q8: Q8Layers, reuseHead: boolean): Float32Array {
    const c = this.config;
    const n = step.rows;
    const h = c.hiddenSize;
    const inter = q8.layers[0].down.k;
    const { norms } = q8;
    const gemm = (w: PackedQ8, x: Float32Array, y: Float32Array, rows = n) => this.native.q8Gemm(w.packed, x, y, rows, w.n, w.k);
    const { cos, sin } = this.ropeRows(step.positions);
    // One buffer each for the pass, reused by every layer; the embedded rows are the residual,
    // which addRmsNorm adds each sublayer's output into.
    const q = new Float32Array(n * c.numHeads * c.headDim);
    const k = new Float32Array(n * c.numKvHeads * c.headDim);
    const v = new Float32Array(k.length);
    const attn = new Float32Array(q.length);
    const projected = new Float32Array(n * h);
    const normed = new Float32Array(n * h);
    const gateUp = new Float32Array(n * 2 * inter);
    const act = new Float32Array(n * inter);
    const residual = this.embedding.rows(step.tokens);
    this.native.addRmsNorm(null, residual, norms.input[0], normed, norms.eps);
    for (let l = 0; l < c.numLayers; l++) {
      const layer = q8.layers[l];
      gemm(layer.q, normed, q);
      gemm(layer.k, normed, k);
      gemm(layer.v, normed, v);
      if (cos && sin) {
        this.native.rope(q, cos, sin, c.numHeads, c.headDim);
        this.native.rope(k, cos, sin, c.numKvHeads, c.headDim);
      }
      this.native.writeKv(k, v, this.cache.keys[l], this.cache.values[l], step.slots, this.kvCode);
      this.native.attention(q, attn, this.cache.keys[l], this.cache.values[l], step.seqInfo, step.tables, this.dims, this.scale);
      gemm(layer.o, attn, projected);
      this.native.addRmsNorm(projected, residual, norms.post[l], normed, norms.eps);
      gemm(layer.gateUp, normed, gateUp);
      this.native.siluMul(gateUp, act, inter);
      gemm(layer.down, act, projected);
      this.native.addRmsNorm(projected, residual, l === c.numLayers - 1 ? norms.final : norms.input[l + 1], normed, norms.eps);
    }
    const picked = pickRows(normed, step.logitsRows, h);
    const rows = step.logitsRows.length;
    const logits = reuseHead ? this.headBuffer(rows * c.vocabSize) : new Float32Array(rows * c.vocabSize);
    gemm(q8.head, picked, logits, rows);
    this.native.free(q, k, v, attn, projected, gateUp, act, residual, normed);
    if (picked !== normed) this.native.free(picked);
    return logits;
  }

  /** A pass of the small float32 decoder (small-decoder.ts); returns the head's [picked, vocab] output. */
  private runSmallPass(step: PackedStep, small: SmallDecoder, reuseHead: boolean): Float32Array {
    const length = step.logitsRows.length * this.config.vocabSize;
    const logits = reuseHead ? this.headBuffer(length) : new Float32Array(length);
    const residual = this.embedding.rows(step.tokens);
    small.run(step, residual, { keys: this.cache.keys, values: this.cache.values, kvCode: this.kvCode, dims: this.dims, scale: this.scale }, logits);
    this.native.free(residual);
    return logits;
  }

  /** `length` floats of the reused head buffer (q8Gemm writes every one of them). */
  private headBuffer(length: number): Float32Array {
    if (this.headOut.length < length) {
      if (this.headOut.length > 0) this.native.free(this.headOut);
      this.headOut = new Float32Array(length);
    }
    return this.headOut.subarray(0, length);
  }

  /** The step's own cos/sin rows (row i = position of row i), or nulls for a decoder without RoPE. */
  private ropeRows(positions: Int32Array): { cos: Float32Array | null; sin: Float32Array | null } {
    if (!this.rope) return { cos: null, sin: null };
    const { cos, sin, half } = this.rope;
    const n = positions.length;
    const rowCos = new Float32Array(n * half);
    const rowSin = new Float32Array(n * half);
    for (let r = 0; r < n; r++) {
      const at = positions[r] * half;
      rowCos.set(cos.subarray(at, at + half), r * half);
      rowSin.set(sin.subarray(at, at + half), r * half);
    }
    return { cos: rowCos, sin: rowSin };
  }

  /** The step's own cos/sin rows (row i = position of row i) and positions 0..n-1 into them. */
  private ropeFeeds(positions: Int32Array): Record<string, ort.Tensor> {
    const { cos, sin } = this.ropeRows(positions);
    if (!cos || !sin || !this.rope) return {};
    const n = positions.length;
    const half = this.rope.half;
    if (this.rowPositions.length < n) this.rowPositions = BigInt64Array.from({ length: Math.max(n, 2 * this.rowPositions.length) }, (_, i) => BigInt(i));
    return {
      [SegmentInputs.ropeCos]: new ort.Tensor('float32', cos, [n, half]),
      [SegmentInputs.ropeSin]: new ort.Tensor('float32', sin, [n, half]),
      [SegmentInputs.ropePositions]: new ort.Tensor('int64', this.rowPositions.subarray(0, n), [1, n]),
    };
  }

  /** Packs the batch's tokens into rows and checks every position and block up front. */
  private pack(batch: readonly StepSequence[]): PackedStep {
    const bs = this.cache.blockSize;
    const rows = batch.reduce((n, s) => n + s.tokens.length, 0);
    const positions = new Int32Array(rows);
    const tokens = new Int32Array(rows);
    const slots = new Int32Array(rows);
    const seqInfo = new Int32Array(4 * batch.length);
    const tableParts: number[] = [];
    const picked: number[] = [];
    const logitsAt: PackedStep['logitsAt'] = [];
    let row = 0;
    batch.forEach((s, i) => {
      const count = s.tokens.length;
      const past = s.positionOffset;
      if (count < 1) throw new Error('a step sequence needs at least one token');
      if (past + count > this.maxPositions) throw new Error(`position ${past + count - 1} is beyond the model's ${this.maxPositions} positions`);
      seqInfo.set([row, count, past, tableParts.length], 4 * i);
      const blocks = Math.ceil((past + count) / bs);
      for (let b = 0; b < blocks; b++) tableParts.push(this.cache.block(s.blockTable, b * bs));
      for (let t = 0; t < count; t++) {
        positions[row + t] = past + t;
        tokens[row + t] = s.tokens[t];
        slots[row + t] = this.cache.slot(s.blockTable, past + t);
      }
      const from = s.allLogits ? 0 : count - 1;
      logitsAt.push({ first: picked.length, count: count - from });
      for (let t = from; t < count; t++) picked.push(row + t);
      row += count;
    });
    return {
      rows,
      positions,
      tokens,
      seqInfo,
      tables: Int32Array.from(tableParts),
      slots,
      logitsRows: BigInt64Array.from(picked, (r) => BigInt(r)),
      logitsAt,
    };
  }
}
