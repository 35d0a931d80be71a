// ModelRunner over the decoder cut at its attention (graph/decoder-segments.ts): one ONNX session
// per segment, and the native paged-attention kernel (native-attention.ts) between them, reading
// each sequence's past K/V in place from the paged cache.
//
// A step packs every scheduled token into one set of rows — prefill chunks of several sequences
// and all decodes together, no padding — because everything but attention is row-wise; the
// kernel gets each sequence's rows, past length and block table. So prefill chunks of many
// requests run as one batch, and a decode step's cost grows with the tokens actually cached, not
// with a padded or gathered copy of them.
//
// At one sequence a step is onnxruntime-node's per-run overhead more than compute (stories260K:
// six runs of ~20 us in a ~150 us step; what one run costs: session.ts). Measured here, runner
// alone (`node dist/bench/forward.js --models stories260K,100m-gguf --contexts 128 --batches 1,32
// --seconds 3`, before and after interleaved under one lock, three rounds, steps/s):
// - Segments return one packed output instead of q, k, v and the residual (decoder-segments.ts):
//   stories260K batch 1 6,029 / 6,148 / 6,500 -> 6,346 / 6,682 / 7,261 (-> ~138 us a step), batch 32 1,059 /
//   976 / 1,206 -> 1,224 / 1,071 / 1,383; 100M Q8_0 batch 1 122 / 142 / 201 -> 117 / 108 / 212
//   and batch 32 17.0 / 20.7 / 32.5 -> 17.5 / 13.2 / 32.4 (its steps are matmul-bound; rounds 1-2 on
//   a loaded machine, round 3 quieter; the 100M figures move more with the machine's load than
//   with the change). Both runners in one process, alternating (after the merge with the passes
//   and freeing below), 100M at context 128, median of 6 rounds, wall / CPU ms per step: batch 1
//   12.84 / 9.08 -> 10.41 / 8.25 and 7.20 / 7.93 -> 6.92 / 7.08 (two runs), batch 32
//   73.3 / 56.7 -> 66.9 / 55.2. One 100M layer segment alone, both builds in one
//   process: 1 row 0.16-0.22 -> 0.15-0.17 ms, 32 rows 2.1-2.6 ms either way, 700 rows (prefill)
//   44-76 -> 43-51 ms: the Concat's copy does not show. Served (stories260K, short prompts, 64
//   tokens, 1 stream, `bench/serve.js ... --concurrency 1 --repeat 2`, two rounds): TPOT p50
//   0.29 / 0.27 -> 0.17 / 0.19 ms (against llama.cpp's server 0.66-1.30 -> 0.93-0.94 in output
//   tok/s; TPOT / runner batch-1 step 1.25-1.30 after); 100M short, one round: 7.17 -> 5.88 ms.
// - Not taken: the one-graph decoder (graph-runner.ts, attention inside the graph, one run per
//   step) for steps of few sequences, over this cache. Once the segments packed their outputs it
//   measured 7,160-7,696 batch-1 steps/s at context 128 against the segments' 6,273-7,097 (and
//   lost at batch 32, 747-945 against 820-1,297; `--attention graph`, two rounds): at most ~10%
//   at one sequence, for a second session holding every weight again and a graph that would have
//   to read the 16-bit cache (it reads float32 rows today).
// - Not taken: a larger young generation for the engine worker (Worker resourceLimits
//   maxYoungGenerationSizeMb 48; the worker scavenges every ~300 steps at one stream): served
//   stories260K, 64-token sequential requests, E2E p50 13.9/13.8/12.7 ms against 13.1/14.2/13.3
//   by default, within the noise.
// (Measured before the passes and the freeing below. With one packed output, a layer's q, k and
// v stay until the next run frees their buffer with the residual: one layer's, at most
// MAX_PASS_ROWS rows.)
//
// Memory (issue 16; the ~1.1B Q8_0 bench model served with `--max-num-seqs 32 --max-model-len
// 1024`, 32 distinct ~700-token prompts at once, max_tokens 32; peak RSS as VmHWM, MiB):
// onnxruntime-node copies every fetched output into a new ArrayBuffer, which V8 frees only when it
// collects it: at a 2048-row prefill step, ~36 MB per layer. Freeing each as soon as it is dead
// (the addon's `free` detaches it) took the peak from 2585 to 2388/2446; running a step of more
// than MAX_PASS_ROWS rows as passes, from there to 2242/2226 (resident after the run: 2211/2198;
// llama-server with the same prompts, -np 32: 1922). Steps did not get slower: both runners in one
// process, alternating, CPU ms per step, median of 5 rounds (100M) / 3 (1.1B), before -> after:
// 100M prefill of 700 667 -> 628 (wall 373 -> 340), decode at context 128 batch 1 8.74 -> 8.78,
// batch 32 58.1 -> 53.8; 1.1B prefill of 700 6014 -> 5577, of 3 x ~700 (2048 rows, 4 passes)
// 18439 -> 17419, batch 1 65.5 -> 65.1, batch 32 333 -> 322.
//
// Where a batch-32 decode step goes (issue 16; 32 sequences at context 70, float16 KV as served,
// 2 threads, timers around each part of runStep, a shared 2-core machine): 100M Q8_0 28-30 ms =
// the 13 session runs 20-23 (MatMulNBits: the 11 layer segments 1.3-1.8 ms each, the 32000-row
// head 4.7-5.8), the attention kernel 5.7-7.1, K/V writes 0.3, the rest of runStep (packing,
// RoPE rows, embedding rows, tensors) 0.9 (1.3-1.8 before the head's logits were returned
// without a copy, below), and V8's GC ~1 ms (each run's outputs are new buffers: the binding
// copies every fetched output out, runtime-probe.md section 2, so pre-allocated outputs would not
// save it). stories260K 1.6-2.1 ms = runs 0.5-0.7, attention 0.9-1.2 (head size 8; on one thread
// 1.9), the rest 0.15. Served at 32 streams the 100M model's TPOT sits within 10% of the step;
// stories260K's is 2-4x its step, the HTTP thread's ~70 us per streamed chunk (a writev each,
// ~18 us, and GC) competing for the 2 cores with the step's threads and the load generator.
//
// Q8_0 linears in the addon (issue 16; graph/q8-linear-segments.ts, native/src/q8-gemm.cc): on an
// AVX512-VNNI CPU (or an AVX2 one: figures below) a llama-family model whose QKV, o_proj, MLP and head are all Q8_0 runs them (and
// RoPE and the SwiGLU) in the addon, its segments reduced to the RMSNorms (since, none: below). Runner alone, the
// bench models, `node dist/bench/forward.js --models 100m-gguf --contexts 128 --batches 1,32
// --seconds 3 [--native-q8-gemm off]`, interleaved under the bench lock, two rounds (steps/s):
//   100M  prefill 128   16.2 / 16.2 -> 30.4 / 32.1  (2,067 -> 3,886-4,104 tok/s)
//         batch 1      169 / 162  -> 196 / 216
//         batch 32     30.9 / 32.3 -> 44.7 / 48.2  (988-1,033 -> 1,431-1,541 tok/s; 32-vs-1 gain 5.9-6.4x -> 7.1-7.3x)
//   1.1B (`--models 1b-gguf --seconds 2`, one round) prefill 128 2.14 -> 4.12 (274 -> 528 tok/s),
//         batch 1 30.0 -> 34.3, batch 32 6.18 -> 10.69 (198 -> 342 tok/s; gain 6.6x -> 10.0x).
// Both runners in one process, alternating, 100M at context 128, wall / CPU ms per step (three
// rounds): batch 32, 2 threads 29.3-30.1 / 51-53 -> 21.2-27.0 / 37; 1 thread 46 / 47-48 -> 31-32
// / 33-34; batch 1, 2 threads 6.6-6.7 / 10.5-10.9 -> 5.3-5.4 / 6.0-6.2. A batch-32 step then:
// (23 ms, timers around each call) attention 8.4 ms, the GEMMs 11.3 (q, k, v and o 4.2, gate_up
// 3.3, down 1.7, the head 2.1: slower than the same calls alone in bench/q8-gemm, as the runner
// streams its ~110 MB of weights from memory every step), the norm segments 1.6, the rest ~1.7.
// The head's output of a single-pass step goes into one buffer kept across steps (headOut;
// StepResult is valid until the next step). Served 100M Q8_0, 32 streams of 64 tokens, short
// prompts, both builds up at once, waves alternating (8 each): tok/s median 1015 -> 1220, TPOT
// p50 30.6 -> 25.1 ms; CPU per token of V8's helper threads 147 -> 28 us (the worker had
// scavenged every ~8 steps for external memory pressure, 0.5-6 ms each) and of the step's thread
// 649 -> 576.
//
// The whole decoder in the addon (issue 16): the RMSNorms and their residual adds too
// (native/src/rms-norm.cc), so a step on this path runs no onnxruntime session (it had run
// 1 + 2 x layers norm-only segments, ~20 us of onnxruntime-node overhead each), and the addon's
// thread pool keeps its helper spinning between calls, so every decode GEMM and attention call
// splits over both cores (native/src/attention.cc's Pool, q8-gemm.cc). Where a 100M batch-1 step
// goes after (context 128, timers around each addon call, 500 steps): q, k, v and o (768x768) 48
// calls 0.76 ms, gate_up 0.89, down 0.46, the head 0.59, attention 0.29 (24 us a layer), norms,
// RoPE, SwiGLU and K/V writes 0.07, the rest (JS) 0.15: 3.2 ms, the GEMMs streaming weights at
// ~42-48 GB/s (the machine reads ~45.5). Before -> after, interleaved under the bench lock:
//   runner alone, `node dist/bench/forward.js --models 100m-gguf --contexts 128 --batches 1,32
//   --seconds 3` (steps/s; a loaded machine moves both): batch 1 191 / 203 -> 251 / 326 (5.2 /
//   4.9 -> 4.0 / 3.1 ms), batch 32 34.4 / 48.6 -> 37.9 / 62.8, prefill 128 3,305 / 4,063 ->
//   4,495 / 5,219 tok/s; the norms alone (same pool as before) batch 1 223 -> 257 steps/s, 5.0 ->
//   4.4 CPU ms per step. `--models 1b-gguf --seconds 2` batch 1 33.4 / 34.9 / 34.9 / 27.8 ->
//   39.4 / 29.1 / 39.0 / 48.2 (28.6-36 -> 20.8-25.6 ms; the 29.1 round had one core).
//   Served, `node dist/bench/serve.js --models 100m --prompts short --concurrency 1 --max-tokens
//   64 --repeat 2 --peer llama-server ...` (ortllm / llama-server output tok/s, each run with its
//   own peer figure): before 231 / 233 (0.99), 232 / 248 (0.93), 239 / 242 (0.99); after 301 / 249
//   (1.21), 312 / 248 (1.26), 330 / 263 (1.25), 315 / 235 (1.34), and at load average 5-7 226 / 184
//   (1.23), 214 / 245 (0.87); TPOT p50 4.1-4.3 -> 2.9-3.3 ms. At 32 streams (`--concurrency 32
//   --repeat 1 --peer none`) within the noise: 1695 / 1004 / 1182 -> 1167 / 1090 / 1081 / 1120 tok/s,
//   TPOT p50 17.0 / 29.6 / 25.3 -> 25.2 / 27.0 / 27.1 / 25.2 ms.
// - Not taken: q, k and v packed as one weight, a batch-1 step's three GEMMs as one 768x2304 call
//   (the separate calls as views of its column groups at more rows). 100M batch 1, 500 steps a
//   run, six rounds alternating: q, k, v and o 737 / 792 / 767 / 693 -> 635 / 679 / 766 / 712 us a
//   step where both cores were free (965 / 912 -> 914 / 925 where one was), the step 3.24 / 3.31
//   / 3.22 / 2.95 -> 2.84 / 2.96 / 3.31 / 3.16 ms: ~50 us, within the noise.
// Batch-32 steps on this path (issue 16): native/src/q8-gemm.cc's header has where the 100M and
// 1.1B steps go and what cut them (weights in huge pages, prefetching). Not taken: keeping
// runQ8Pass's buffers across steps. In a process with glibc's own malloc thresholds (the runner
// benches) allocating, faulting in and freeing a 100M batch-32 pass's ~1.7 MB of them costs ~0.8 ms
// a step (a loop of the same allocations: 770-890 us against 35-42 us refilling kept ones), but
// with the server's fixed 4 MiB mmap threshold (engine/worker/malloc-tuning.ts) 57-62 us, so the
// served step would not gain and the buffers would stay resident between prefills.
// The same path on AVX2-only CPUs (native/src/q8-gemm-avx2.inc, the same outputs as the VNNI
// kernel; figures of the kernel in q8-gemm.cc's AVX2 section). A shared 2-core AMD EPYC Zen 1,
// runner alone, `node dist/bench/forward.js --models 100m-gguf --contexts 128 --batches 1,32
// --seconds 3 [--native-q8-gemm off]`, MatMulNBits -> this path, interleaved under the bench lock
// (steps/s; CPU ms a step):
//   100M prefill 128  77.7 / 74.8 / 160.5 / 78.3 -> 146.9 / 137.6 / 279.6 / 144.7 tok/s (CPU 1620 -> 880 ms)
//        batch 1      35.7 / 35.8 / 60.5 / 35.2 -> 51.5 / 53.4 / 77.2 / 47.3 (CPU 26-28 -> 19-25)
//        batch 32     1.77 / 1.77 / 1.99 / 1.86 -> 3.28 / 3.09 / 6.26 / 3.27 (CPU 565-600 -> 304-317)
//   (four rounds: the first two at load average 4-5 from other sessions, the third quiet, where
//   this path had both cores, the fourth at load 2). 1.1B (`--models 1b-gguf --seconds 2`, quiet
//   at the start, load 2.5-3.8): prefill 128 7.3 -> 13.2 tok/s (CPU 17.9 -> 9.6 s), batch 32 0.14
//   -> 0.38 steps/s (CPU 4853 -> 2627 ms), batch 1 4.58 -> 4.49 (CPU 218 -> 229 ms): a tie, both
//   streaming 1.1 GB of weights a step at this VM's ~6 GB/s; three more batch-1 rounds under load
//   (`--batches 1 --seconds 3`) 4.89 / 2.27 / 8.96 -> 3.34 / 3.64 / 2.97 steps/s, CPU 199 / 225 /
//   207 -> 199 / 183 / 308 ms, within the load's noise. So native.q8Available (which enables this
//   path) is true on AVX2 CPUs at every batch and shape, as on VNNI ones.
// Logits move by the int8 rounding only: against a float32 (dequantized) runner both int8 paths
// stay ~2.3e-2 off in the largest logit difference (MatMulNBits' and this one alike, ~1% of the
// logits' range), so greedy tokens agree except where the top two are that close.
// Small float32 models (hidden size up to 128: stories260K) run wholly in the addons too, their
// linears in float32 (small-decoder.ts, native/src/f32-decoder.cc): a batch-1 step ~145 -> ~35 us.
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
import type { NativeAttention } from './native-attention';
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
 * that pass. Figures in the header.
 */
const MAX_PASS_ROWS = 512;

/**
 * How long the addon's pool spins between calls on the Q8_0 path, whose step is all addon calls
 * (~100 a step at batch 1, tens of microseconds apart): a futex wake-up per call cost about what
 * splitting it saved. Elsewhere onnxruntime's threads run between the calls and need the cores
 * (native/src/attention.cc's Pool has the figures of both). It pays at 32 streams too: served 100M
 * Q8_0, short prompts, 64 tokens (`serve.js --models 100m --prompts short --concurrency 32
 * --repeat 2 --peer none`), three alternating rounds, tok/s 2192 / 2158 / 2061 against 1978 / 2070
 * / 2000 with the spin at 0.
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

export async function createSegmentedRunner(model: LoadedModel, opts: SegmentedRunnerOptions, native: NativeAttention): Promise<SegmentedRunner> {
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
function packQ8Linears(linears: Q8Linears, numLayers: number, native: NativeAttention, weights: ReadWeights, release: string | null): Q8Layers {
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
   * max-num-seqs x vocab floats; figures in the header.
   */
  private headOut = new Float32Array(0);

  constructor(
    config: ModelArchConfig,
    cache: PagedKvCache,
    private readonly sessions: SyncSession[],
    private readonly native: NativeAttention,
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
    // soon as they are dead rather than left to the collector (see the header's Memory).
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
