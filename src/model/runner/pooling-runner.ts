// PoolingRunner over a pooling graph built by the architecture's descriptor (I/O contract:
// graph/pooling-graph.ts). No KV cache: each call runs whole sequences and returns one vector each.
//
// Packing: many short sequences go into one session.run, padded to the longest and masked. A
// batch of very different lengths would spend most of a run on padding, and every extra run costs
// a fixed price (it streams all weights once), so sequences are sorted by length and cut into the
// groups that cost least under runCost (packGroups). A run also holds at most maxRunPositions
// positions: past that each position costs more (its activations outgrow the core's cache).
// A run is one PoolingForward: the whole graph in one onnxruntime session, or with --dtype
// bfloat16 the encoder with its linears in the addon's bfloat16 GEMM (bf16-pooling-runner.ts;
// docs/perf/embeddings.md has the figures). The packing constants below were measured in float32 and kept for it.
import * as ort from 'onnxruntime-node';
import { architectureOf, graphDtypeFor } from '../architectures/registry';
import { PoolingInputs, PoolingOutputs } from '../graph/pooling-graph';
import type { DecoderArchConfig, EncodeSequence, EncoderArchConfig, LoadedModel, ModelArchConfig, PoolingRunner, PoolingType } from '../types';
import { createBf16Forward } from './bf16-pooling-runner';
import { createSession, type SessionSettings } from './session';

/**
 * A run's fixed price in token positions: a forward streams every weight once whatever its size, as
 * long as computing about this many more positions (measured on the MiniLM shape, one thread, CPU
 * time: 2.1 ms for 1 position, then 0.11 ms per position up to 1024; both scale with the weights,
 * so the ratio holds across model sizes).
 */
const RUN_COST_POSITIONS = 16;

/**
 * The activations one run may hold (positions x intermediate size floats, its widest tensor) before
 * each position costs more. Measured on the MiniLM shape (intermediate 1536, best of 10, CPU time
 * per sequence, this run's code and onnxruntime on the transformers.js export alike): 128-token
 * inputs 14.5 ms at 4 per run (512 positions), 17.7 at 16, 18.1 at 32 with two threads (13.9,
 * 14.7, 16.5 with one); 16-token inputs 1.64 ms at 32 per run, 1.91 at 128 (1.66, 1.78).
 */
const RUN_ACTIVATION_BYTES = 3 * 2 ** 20;

/** Most positions (sequences x padded length) one run holds, unless a single sequence is longer. */
export function maxRunPositions(intermediateSize: number): number {
  return Math.max(64, Math.floor(RUN_ACTIVATION_BYTES / (4 * intermediateSize)));
}

/**
 * How long the runner's idle intra-op threads spin before they sleep (session.ts). A run is ~100
 * nodes; without spinning each parallel section wakes the sleeping helper, and a lone short
 * input's forward waits on those wakes. Measured served (MiniLM-shaped BERT, sequential
 * /v1/embeddings of 16-token inputs, 1,500 per run after 100 to warm up, 2 cores, runs of the
 * settings interleaved, two rounds): never spinning 209.7 / 201.0 embeddings/s (p50 4.32 / 4.68
 * ms, server CPU 6.29 / 6.71 ms each), 10 us 241.8 / 231.5 (3.76 / 4.00, 5.88 / 6.13), 25 us
 * 242.5 / 225.0 (3.74 / 4.02, 5.93 / 6.31), 50 us 245.2 / 227.1 (3.59 / 3.95, 5.85 / 6.25), 100 us
 * 230.8 / 201.7, 1000 us 233.0 / 233.8 at 6.87 / 6.69 ms of CPU; unbounded spinning (onnxruntime's
 * default; two earlier 400-request runs) p50 4.93 / 5.22 ms against 5.37 / 6.12, at 10.0 / 10.4
 * ms of CPU against 7.3 / 7.7; spinning within runs only (session.force_spinning_stop) 185.7 /
 * 218.3 against 144.7 / 198.6, but 8-13% fewer embeddings/s at 32 concurrent. At 32 concurrent
 * (2,500 requests) 25 us was within the noise of never spinning: 621.5 / 553.5 / 569.7 against
 * 635.8 / 575.5 / 553.3 embeddings/s, server CPU 2.74-3.06 against 2.62-3.06 ms each; 50 us 576.4
 * / 492.0 at 3.00-3.09 ms. Those runs had the machine's load average at 2-3 (2 cores). With other
 * tenants at 4-7 the gain was gone: 8 interleaved 1,000-request runs at concurrency 1, 25 us 152.0 /
 * 160.4 / 177.6 / 171.3 embeddings/s against 192.2 / 145.1 / 173.4 / 159.5, server CPU 6.11-7.03
 * against 5.73-6.25 ms each (a helper that spins while another process wants the core takes its
 * turn from it); 128-token inputs within that noise either way. 0 turns it off.
 * Thread count, for the record (runner alone, interleaved): one intra-op thread instead of two ran
 * a lone 1x16 forward in 4.2-4.5 ms against 3.4-4.2 (best of 200), and 14x16 in 25.6 ms wall /
 * 26.1 ms CPU against 17.0 / 32.2; the engine keeps every core (core-host.ts).
 */
export const POOLING_SPIN_MICROSECONDS = 25;

// The runner's forward against onnxruntime on the transformers.js export, both sessions under
// poolingSessionSettings (2 threads, 25 us spin; `THREADS=2 REPS=30 SHAPES=1x16,8x16,1x128 node
// dist/bench/embed-forward.js`, load average 1.7-2.0, best / median wall ms, two runs): 1x16
// 2.11 / 2.35 and 1.99 / 2.19 against 2.12 / 2.28 and 2.10 / 2.30; 8x16 7.91 / 8.19 and 7.88 / 8.16
// against 7.97 / 8.41 and 8.16 / 8.36; 1x128 8.13 / 8.49 and 8.00 / 8.28 against 8.30 / 8.64 and
// 8.30 / 8.54. At parity (within 4%, ours ahead at 1x128): transformers.js's faster concurrency-1
// requests in bench:embed are not its graph. What it runs differently is onnxruntime's default
// session options (an unbounded spin, the CPU memory arena) and no HTTP hop. Tried here and not
// taken (1x16 runs with 1 ms between them, as requests arrive; p50 wall / CPU per run, interleaved
// in one process unless said): the memory arena p50 4.40 / 3.93 / 4.41 / 4.37 / 4.56 / 4.55 ms
// against 4.55 / 4.31 / 4.57 / 4.52 / 4.42 / 4.66 (load 3.6), 1x128 and embed-forward's best-of
// within the noise, bench:embed 16 tokens at concurrency 1 208 / 242 / 271 against 225 / 211 / 227
// embeddings/s (server CPU 7.17 / 6.93 / 5.60 against 6.90 / 6.83 / 7.10 ms); the binding's run
// called synchronously (SyncSession) p50 4.55 / 4.87 against 4.31 / 4.72 (CPU 4.71 / 4.87 against
// 4.77 / 5.08); unbounded spinning (one process per setting) p50 4.60 / 4.29 against 4.41 / 4.09 at
// 8.5-8.6 ms of process CPU per run against 4.6-4.7, onnxruntime's defaults as transformers.js sets
// them 5.47 / 2.39 at 6.6-9.1 ms. The forward is ~75% projections (encoder-graph.ts), which stream
// 42 MB of fp32 weights per run: 1.5 ms of a 2.0 ms 1x16 forward, ~28 GB/s against the 35-37 two
// threads can read.

export interface PoolingRunnerOptions extends SessionSettings {
  /** Keep GGML-quantized weights quantized (MatMulNBits); default true. */
  keepQuantized?: boolean;
  /**
   * --dtype; a type the architecture's pooling graph is not built in is refused. bfloat16 runs the
   * encoder's linears in the addon's bfloat16 GEMM (bf16-pooling-runner.ts) where it can.
   */
  dtype?: 'auto' | 'float32' | 'float16' | 'bfloat16';
}

/** The padded inputs of one run (B sequences of S positions; pooling-graph.ts's I/O contract). */
export interface PaddedBatch {
  batch: number;
  seq: number;
  ids: BigInt64Array;
  types: BigInt64Array;
  mask: Uint8Array;
  /** Each sequence's length: its positions 0..length-1 are real, the rest of its row padding. */
  lengths: Int32Array;
  weights: Float32Array;
}

/** One padded run: the [B, D] pooled outputs, row-major. */
export interface PoolingForward {
  run(inputs: PaddedBatch): Promise<Float32Array> | Float32Array;
  release(): Promise<void>;
}

export async function createPoolingRunner(model: LoadedModel, opts: PoolingRunnerOptions): Promise<PoolingRunner> {
  const { config, output, weights } = model;
  if (!weights) throw new Error(`model ${model.source}: pooling needs weights to build a graph from (ONNX exports generate only)`);
  if (output.kind === 'logits' || output.kind === 'transcription') throw new Error('createPoolingRunner: the model is served for generation');
  const graphs = architectureOf(config).graphs;
  if (!graphs.pooling) throw new Error(`${config.architecture} models cannot be served for pooling`);
  const outputSize = output.kind === 'classifier' ? output.numLabels : config.hiddenSize;
  if (opts.dtype === 'bfloat16') return new GraphPoolingRunner(config, createBf16Forward(model, poolingSessionSettings(opts)), output.pooling, outputSize);
  const dtype = graphDtypeFor(config, 'pooling', opts.dtype);
  const built = graphs.pooling(config, weights, output, { keepQuantized: opts.keepQuantized ?? true, maxPositions: model.contextLength, dtype });
  const session = await createSession(built, poolingSessionSettings(opts));
  return new GraphPoolingRunner(config, new SessionForward(session), output.pooling, outputSize);
}

/** The whole pooling graph in one onnxruntime session. */
class SessionForward implements PoolingForward {
  private readonly takesTokenTypes: boolean;

  constructor(private readonly session: ort.InferenceSession) {
    this.takesTokenTypes = session.inputNames.includes(PoolingInputs.tokenTypeIds);
  }

  async run(inputs: PaddedBatch): Promise<Float32Array> {
    const dims = [inputs.batch, inputs.seq];
    const feeds: Record<string, ort.Tensor> = {
      [PoolingInputs.inputIds]: new ort.Tensor('int64', inputs.ids, dims),
      [PoolingInputs.attentionMask]: new ort.Tensor('bool', inputs.mask, dims),
      [PoolingInputs.poolWeights]: new ort.Tensor('float32', inputs.weights, dims),
    };
    if (this.takesTokenTypes) feeds[PoolingInputs.tokenTypeIds] = new ort.Tensor('int64', inputs.types, dims);
    return (await this.session.run(feeds))[PoolingOutputs.pooled].data as Float32Array;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

/** The session settings a pooling runner runs with: the options', with a bounded spin unless they say otherwise. */
export function poolingSessionSettings(opts: PoolingRunnerOptions): SessionSettings {
  return { device: opts.device, intraOpThreads: opts.intraOpThreads, spinMicroseconds: opts.spinMicroseconds ?? POOLING_SPIN_MICROSECONDS };
}

class GraphPoolingRunner implements PoolingRunner {
  private busy = false;

  constructor(
    readonly config: ModelArchConfig,
    private readonly forward: PoolingForward,
    private readonly pooling: PoolingType,
    readonly outputSize: number,
  ) {}

  async encode(batch: readonly EncodeSequence[]): Promise<Float32Array[]> {
    if (this.busy) throw new Error('PoolingRunner.encode called while another call is running');
    this.busy = true;
    try {
      const results = new Array<Float32Array>(batch.length);
      for (const group of packGroups(batch, this.config.hiddenSize, maxRunPositions(feedForwardWidth(this.config)))) {
        const vectors = await this.run(group.map((i) => batch[i]));
        group.forEach((i, row) => (results[i] = vectors[row]));
      }
      return results;
    } finally {
      this.busy = false;
    }
  }

  async dispose(): Promise<void> {
    await this.forward.release();
  }

  private async run(group: readonly EncodeSequence[]): Promise<Float32Array[]> {
    const batch = group.length;
    const seq = Math.max(...group.map((s) => s.tokens.length));
    const ids = new BigInt64Array(batch * seq);
    const types = new BigInt64Array(batch * seq);
    const mask = new Uint8Array(batch * seq);
    const weights = new Float32Array(batch * seq);
    const lengths = new Int32Array(batch);
    group.forEach((s, b) => {
      const n = s.tokens.length;
      lengths[b] = n;
      if (n < 1) throw new Error('a pooled sequence needs at least one token');
      if (s.tokenTypeIds && s.tokenTypeIds.length !== n) throw new Error('token_type_ids must have one entry per token');
      for (let i = 0; i < n; i++) {
        ids[b * seq + i] = BigInt(s.tokens[i]);
        types[b * seq + i] = BigInt(s.tokenTypeIds?.[i] ?? 0);
        mask[b * seq + i] = 1;
      }
      fillPoolWeights(weights.subarray(b * seq, b * seq + n), this.pooling);
    });
    const out = await this.forward.run({ batch, seq, ids, types, mask, lengths, weights });
    const d = this.outputSize;
    return group.map((_, b) => out.slice(b * d, (b + 1) * d));
  }
}

/** A position's widest activation: the feed-forward layer's (encoders and decoders both declare it). */
function feedForwardWidth(config: ModelArchConfig): number {
  const width = (config as Partial<EncoderArchConfig | DecoderArchConfig>).intermediateSize;
  return typeof width === 'number' ? width : 4 * config.hiddenSize;
}

/** A sequence's weights over its own positions (padding keeps weight 0). */
function fillPoolWeights(weights: Float32Array, pooling: PoolingType): void {
  const n = weights.length;
  if (pooling === 'CLS') weights[0] = 1;
  else if (pooling === 'LAST') weights[n - 1] = 1;
  else weights.fill(1 / n);
}

/**
 * What one padded run of `rows` sequences of `length` positions costs, in token positions: its
 * fixed price, and each position's linear layers plus its attention over `length` keys (per layer
 * 4·S·H multiply-adds against the linear layers' ~12·H², hence the S / 6H share).
 */
export function runCost(rows: number, length: number, hiddenSize: number): number {
  return RUN_COST_POSITIONS + rows * length * (1 + length / (6 * hiddenSize));
}

/**
 * Indices of `batch` grouped for padded runs: sorted by length, cut where the padding a merge
 * would add costs more than another run (exact: the cheapest cuts of the sorted list by runCost),
 * no run of several sequences over `maxPositions` padded positions. Equal lengths share a run
 * as far as maxPositions allows.
 */
export function packGroups(batch: readonly EncodeSequence[], hiddenSize: number, maxPositions = Infinity): number[][] {
  const order = batch.map((_, i) => i).sort((a, b) => batch[a].tokens.length - batch[b].tokens.length);
  const n = order.length;
  // cheapest[i]: the least cost of running order[0..i); cut[i]: where its last group starts.
  const cheapest = new Float64Array(n + 1);
  const cut = new Int32Array(n + 1);
  for (let end = 1; end <= n; end++) {
    // Sorted ascending, so order[end - 1] is the padded length of any group ending there.
    const length = batch[order[end - 1]].tokens.length;
    cheapest[end] = Infinity;
    for (let start = end - 1; start >= 0; start--) {
      // Groups only grow from here on (same padded length, more rows).
      if (end - start > 1 && (end - start) * length > maxPositions) break;
      const cost = cheapest[start] + runCost(end - start, length, hiddenSize);
      if (cost < cheapest[end]) {
        cheapest[end] = cost;
        cut[end] = start;
      }
    }
  }
  const groups: number[][] = [];
  for (let end = n; end > 0; end = cut[end]) groups.unshift(order.slice(cut[end], end));
  return groups;
}
