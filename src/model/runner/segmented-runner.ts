// ModelRunner over the decoder cut at its attention: a backend (backends/, chosen by
// backends/choose-backend.ts) runs the layers, the native paged-attention kernel
// (native-kernels.ts) between them reading each sequence's past K/V in place from the paged cache.
//
// A step packs every scheduled token into one set of rows — prefill chunks of several sequences
// and all decodes together, no padding — because everything but attention is row-wise; the
// kernel gets each sequence's rows, past length and block table. So prefill chunks of many
// requests run as one batch, and a decode step's cost grows with the tokens actually cached, not
// with a padded or gathered copy of them. The runner owns the packing, the passes, the KV cache,
// the embedding rows and the logits; figures in docs/perf/segmented-runner.md.
import { availableParallelism } from 'node:os';
import { architectureOf, graphDtypeFor } from '../architectures/registry';
import type { AccuracyLevel } from '../graph/matmul-nbits';
import type { DecoderArchConfig, LoadedModel, ModelArchConfig, ModelWeights, RunnerOptions, StepResult, StepSequence, WeightTensor } from '../types';
import type { BackendWeights, DecoderBackend, KvView, PassRows } from './backends/decoder-backend';
import { chooseDecoderBackend } from './backends/choose-backend';
import { EmbeddingRows } from './embedding-rows';
import { PagedKvCache } from './kv-cache';
import { KV_STORAGE } from './kv-dtype';
import { layerWindows, poolsDifferFromOne, type KvPool } from './kv-pools';
import { LoraSlots } from './lora-slots';
import type { NativeKernels } from './native-kernels';
import { PagedRunner } from './paged-runner';
import { joinPasses, splitRows } from './row-passes';
import { writeInputEmbeds } from './input-embeds';
import { checkRuns, entryCount, writeEntries } from './bidirectional-runs';

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

export async function createSegmentedRunner(model: LoadedModel, opts: SegmentedRunnerOptions, native: NativeKernels, log: (line: string) => void = console.info): Promise<SegmentedRunner> {
  const graphs = architectureOf(model.config).graphs;
  if (!model.weights || !graphs.causalLmSegments) throw new Error(`${model.config.architecture} models cannot run segmented`);
  const config = model.config;
  const maxPositions = Math.max(config.maxPositionEmbeddings, model.contextLength);
  const keepQuantized = opts.keepQuantized ?? true;
  const choice = chooseDecoderBackend(model, { ...opts, keepQuantized }, native);
  log(`[engine] decoder backend: ${choice.name} (${choice.reason})`);
  const weights = new ReadWeights(model.weights);
  const decoder = graphs.causalLmSegments(config, weights, {
    maxPositions,
    maxModelLen: opts.maxModelLen ?? model.contextLength,
    keepQuantized,
    quantAccuracyLevel: opts.quantAccuracyLevel,
    dtype: graphDtypeFor(config, 'causalLmSegments', opts.dtype),
  });
  // The embedding table is still read per step: every other tensor a backend copies may go.
  weights.consume(opts.consumeWeights ? decoder.embeddingName : null);
  const cache = new PagedKvCache(config, opts.blockSize, opts.numBlocks, opts.kvCacheDtype ?? 'float32', checkedPools(config, opts.kvPools), opts.sharedKvCache);
  const backend = await choice.create({ config, weights, native, decoder, device: opts.device, intraOpThreads: opts.intraOpThreads, lora: opts.lora });
  const embedding = new EmbeddingRows(model.weights, decoder.embeddingName, config, opts.embeddingFileMinBytes);
  // Rows read from the model file: the loaded table is not needed either (embedding-rows.ts).
  if (opts.consumeWeights && embedding.fileBacked) model.weights.release?.(decoder.embeddingName);
  // Unset (or 0) intra-op threads means ORT's default, every core: attention gets as many.
  native.setThreads(opts.intraOpThreads || availableParallelism(), backend.poolSpinMicros);
  const loras = opts.lora ? new LoraSlots(config as DecoderArchConfig, opts.lora.maxLoras, opts.lora.maxRank) : undefined;
  return new SegmentedRunner(config, cache, backend, native, embedding, decoder.embeddingScale, maxPositions, opts.maxPassRows ?? MAX_PASS_ROWS, loras);
}

/** The pools as given, after checking that a windowed pool holds only layers with that window (a full pool may hold any). */
function checkedPools(config: ModelArchConfig, pools: readonly KvPool[] | undefined): readonly KvPool[] | undefined {
  const windows = layerWindows(config);
  for (const pool of pools ?? []) {
    const wrong = pool.layers.find((l) => pool.window !== 0 && windows[l] !== pool.window);
    if (wrong !== undefined) throw new Error(`KV pool of window ${pool.window} holds layer ${wrong}, whose window is ${windows[wrong]}`);
  }
  return pools;
}

/** The model's weights, remembering which tensors a backend's build read (to release them after). */
class ReadWeights implements BackendWeights {
  private readonly read = new Set<string>();
  private keep: string | null = null;

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

  /** From now on releaseRead drops what was read but `keep` (null: the caller keeps the weights, nothing is dropped); forgets the reads so far. */
  consume(keep: string | null): void {
    this.keep = keep;
    this.read.clear();
  }

  forgetReads(): void {
    this.read.clear();
  }

  releaseRead(): void {
    if (this.keep !== null) for (const name of this.read) if (name !== this.keep) this.weights.release?.(name);
    this.read.clear();
  }
}

/** Where the step's rows come from and go to: the backend's rows, and the tokens and logits bookkeeping. */
interface PackedStep extends PassRows {
  tokens: Int32Array;
  /** Per sequence where its rows start among the picked rows, and how many. */
  logitsAt: { first: number; count: number }[];
}

export class SegmentedRunner extends PagedRunner<DecoderBackend> {
  /** M-RoPE positions need a model that rotates by sections (its mrope_section). */
  protected override get takesRopePositions(): boolean {
    return (this.config as DecoderArchConfig).mropeSection !== undefined;
  }
  private readonly kv: KvView;
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
    private readonly backend: DecoderBackend,
    private readonly native: NativeKernels,
    private readonly embedding: EmbeddingRows,
    private readonly embeddingScale: number,
    private readonly maxPositions: number,
    private readonly maxPassRows: number,
    /** RunnerOptions.lora's adapters and slots (absent: the runner runs none). */
    readonly loras?: LoraSlots,
  ) {
    super(config, cache, backend);
    const kvCode = KV_STORAGE[cache.dtype].nativeCode;
    this.kv = {
      keys: cache.keys,
      values: cache.values,
      kvCode,
      dims: Int32Array.from([config.numHeads, config.numKvHeads, config.headDim, cache.blockSize, kvCode]),
    };
  }

  /** The cache's KV pools where they are more than the one of every layer (ModelRunner.kvPools). */
  get kvPools(): readonly KvPool[] | undefined {
    return poolsDifferFromOne(this.cache.pools) ? this.cache.pools : undefined;
  }

  /** What runs the layers (backends/choose-backend.ts's BackendName). */
  get backendName(): string {
    return this.backend.name;
  }

  override async dispose(): Promise<void> {
    this.embedding.close();
    await super.dispose();
  }

  protected override get takesInputEmbeds(): boolean {
    return true;
  }

  protected override get takesBidirectionalRuns(): boolean {
    return true;
  }

  /** Synchronous inside (the backend's session runs and kernels); a throw still rejects PagedRunner.step. */
  protected runStep(batch: readonly StepSequence[]): Promise<StepResult> {
    const rows = batch.reduce((n, s) => n + s.tokens.length, 0);
    if (rows <= this.maxPassRows) return Promise.resolve(this.runPass(batch, this.pack(batch), true));
    // The step as a whole stays within max_loras (each pass's own slots are checked as it is packed).
    this.loras?.checkStep(batch);
    const passes = splitRows(batch, this.maxPassRows, this.config.hiddenSize);
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
    const reuse = reuseHead && step.logitsRows.length === batch.length;
    const hidden = this.embedding.rows(step.tokens);
    if (this.embeddingScale !== 1) for (let i = 0; i < hidden.length; i++) hidden[i] *= this.embeddingScale;
    writeInputEmbeds(hidden, batch, this.config.hiddenSize);
    const logits = this.backend.run(step, hidden, this.kv, (length) => (reuse ? this.headBuffer(length) : new Float32Array(length)));
    return this.logitsOf(batch, step, logits);
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

  /** `length` floats of the reused head buffer (the backend's head writes every one of them). */
  private headBuffer(length: number): Float32Array {
    if (this.headOut.length < length) {
      if (this.headOut.length > 0) this.native.free(this.headOut);
      this.headOut = new Float32Array(length);
    }
    return this.headOut.subarray(0, length);
  }

  /** Packs the batch's tokens into rows and checks every position and block up front. */
  private pack(batch: readonly StepSequence[]): PackedStep {
    const bs = this.cache.blockSize;
    const pools = this.cache.pools;
    const rows = batch.reduce((n, s) => n + s.tokens.length, 0);
    const positions = new Int32Array(rows);
    // M-RoPE rows only where a sequence brings them; the others' three positions are their 1-D one.
    const ropePositions = batch.some((s) => s.ropePositions) ? new Int32Array(3 * rows) : undefined;
    const tokens = new Int32Array(rows);
    const poolSlots = pools.map(() => new Int32Array(rows));
    const seqInfo = new Int32Array(4 * batch.reduce((n, s) => n + entryCount(s), 0));
    let item = 0;
    const runRows: number[] = [];
    const tableParts: number[][] = pools.map(() => []);
    const picked: number[] = [];
    const logitsAt: PackedStep['logitsAt'] = [];
    let row = 0;
    batch.forEach((s) => {
      const count = s.tokens.length;
      const past = s.positionOffset;
      if (count < 1) throw new Error('a step sequence needs at least one token');
      if (past + count > this.maxPositions) throw new Error(`position ${past + count - 1} is beyond the model's ${this.maxPositions} positions`);
      checkRuns(s);
      item = writeEntries(seqInfo, item, s, row, tableParts[0].length, runRows);
      const blocks = Math.ceil((past + count) / bs);
      pools.forEach((pool, p) => {
        const table = p === 0 ? s.blockTable : s.blockTables?.[p];
        if (table === undefined) throw new Error(`a step sequence needs a block table for each of the runner's ${pools.length} KV pools`);
        // The kernel never reads a windowed pool's blocks wholly behind the first query's window
        // (released, -1 in the table): any valid id stands in for them.
        const firstRead = pool.window > 0 ? Math.floor(Math.max(0, past - pool.window + 1) / bs) : 0;
        for (let b = 0; b < blocks; b++) tableParts[p].push(b < firstRead ? Math.max(0, table[b] ?? 0) : this.cache.block(table, b * bs, p));
        for (let t = 0; t < count; t++) poolSlots[p][row + t] = this.cache.slot(table, past + t, p);
      });
      for (let t = 0; t < count; t++) {
        positions[row + t] = past + t;
        tokens[row + t] = s.tokens[t];
      }
      if (ropePositions) placeRopePositions(ropePositions, rows, row, s);
      const from = s.allLogits ? 0 : count - 1;
      logitsAt.push({ first: picked.length, count: count - from });
      for (let t = from; t < count; t++) picked.push(row + t);
      row += count;
    });
    const poolTables = tableParts.map((parts) => Int32Array.from(parts));
    const poolOf = this.cache.poolOfLayer;
    return {
      rows,
      positions,
      ...(ropePositions ? { ropePositions } : {}),
      tokens,
      seqInfo,
      ...(runRows.length > 0 ? { runRows: Int32Array.from(runRows) } : {}),
      layerTables: Array.from(poolOf, (p) => poolTables[p]),
      layerSlots: Array.from(poolOf, (p) => poolSlots[p]),
      logitsRows: BigInt64Array.from(picked, (r) => BigInt(r)),
      logitsAt,
      ...this.loraOf(batch),
    };
  }

  /** The pass's `lora` where a sequence names an adapter (a runner built without lora refuses one). */
  private loraOf(batch: readonly StepSequence[]): Pick<PassRows, 'lora'> {
    if (!this.loras) {
      if (batch.some((s) => s.lora)) throw new Error('a step sequence names a LoRA adapter, but the runner was built without LoRA (RunnerOptions.lora)');
      return {};
    }
    const lora = this.loras.passLora(batch);
    return lora ? { lora } : {};
  }
}

/** Copies a sequence's [3 * count] M-RoPE positions into the pass's [3 * rows] at `row` (its 1-D positions where it has none). */
function placeRopePositions(into: Int32Array, rows: number, row: number, s: StepSequence): void {
  const count = s.tokens.length;
  const given = s.ropePositions;
  if (given && given.length !== 3 * count) throw new Error(`a step sequence's ropePositions has ${given.length} values, expected 3 x ${count} tokens`);
  for (let axis = 0; axis < 3; axis++) {
    for (let t = 0; t < count; t++) into[axis * rows + row + t] = given ? given[axis * count + t] : s.positionOffset + t;
  }
}
