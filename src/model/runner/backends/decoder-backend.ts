// The seam between the segmented runner and what runs the decoder's layers. The runner packs a
// step's tokens into rows, splits them into passes, embeds the rows, owns the paged KV cache and
// turns the head's output into the step's logits; a backend runs one pass over every layer and
// the head. choose-backend.ts decides which backend a model gets.
import type { SegmentedDecoder } from '../../graph/decoder-segments';
import type { LoraWeights } from '../../lora/lora-weights';
import type { ModelArchConfig, ModelWeights } from '../../types';
import type { KvArray } from '../kv-cache';
import type { NativeKernels } from '../native-kernels';

/** One pass's packed rows (the runner's PackedStep without the bookkeeping backends do not read). */
export interface PassRows {
  rows: number;
  /** Row r's position in its sequence. */
  positions: Int32Array;
  /** M-RoPE models, where a sequence of the pass carries StepSequence.ropePositions: [3 * rows], every row's t, then h, then w. */
  ropePositions?: Int32Array;
  /** Per layer: row r's slot in that layer's KV pool (layers of one pool share the array). */
  layerSlots: readonly Int32Array[];
  /**
   * Per attention entry (a sequence, or one row of a sequence attended row by row): first row, row
   * count, past length, table offset (the attention kernel's `seqs`; one layout for every pool).
   */
  seqInfo: Int32Array;
  /** Rows of bidirectional runs (StepSequence.bidirectionalRuns), 4 ints each: entry, position, the run's first and last position. */
  runRows?: Int32Array;
  /** Per layer: the block tables in that layer's KV pool (the kernel's `tables`). */
  layerTables: readonly Int32Array[];
  /** The rows whose logits the head computes, in order. */
  logitsRows: BigInt64Array;
  /** The pass's LoRA adapters, where a row has one (absent: every row is the base model's). */
  lora?: PassLora;
}

/** Which rows of a pass run with which adapter. */
export interface PassLora {
  /** maxLoras entries: the adapter in each slot this pass (null: none). */
  slots: readonly (LoraWeights | null)[];
  /** Per row: its adapter's slot, or -1 for the base model. */
  rowSlot: Int32Array;
}

/** The paged KV cache as the layers write and read it: per-layer arrays and the attention kernel's arguments. */
export interface KvView {
  keys: readonly KvArray[];
  values: readonly KvArray[];
  /** The cache's storage type as the kernel codes it (kv-dtype.ts KV_STORAGE). */
  kvCode: number;
  /** [heads, kvHeads, headDim, blockSize, kvCode] */
  dims: Int32Array;
}

export interface DecoderBackend {
  /** As choose-backend.ts names it (BackendName). */
  readonly name: string;
  /** How long (µs) the addon's pool spins between calls: worth it only where a step is all addon calls (native-kernels.ts setThreads). */
  readonly poolSpinMicros: number;
  /**
   * Runs every layer and the head over `hidden`, the pass's embedded rows [rows, hidden] (consumed:
   * the backend frees it), writing each layer's K/V into `kv`. Returns the head's output
   * [logitsRows, vocab]: in `logitsBuffer(length)` where the backend writes the head itself.
   */
  run(pass: PassRows, hidden: Float32Array, kv: KvView, logitsBuffer: (length: number) => Float32Array): Float32Array;
  release(): Promise<void>;
}

/** The model's weights as a backend reads them while it builds, releasing what it copied. */
export interface BackendWeights extends ModelWeights {
  /** Forgets the reads so far (they were looks, not copies to release). */
  forgetReads(): void;
  /** Where the runner consumes the weights, drops from the model every tensor read since the last call but the embedding (still read per step). */
  releaseRead(): void;
}

/** What a backend is built from. */
export interface BackendContext {
  config: ModelArchConfig;
  weights: BackendWeights;
  native: NativeKernels;
  /** The architecture's segments: their graphs (built on demand), the embedding's name and each layer's attention options and RoPE table. */
  decoder: SegmentedDecoder;
  device: 'cpu' | 'cuda';
  intraOpThreads?: number;
  /** RunnerOptions.lora: the backend adds the adapters' products of PassRows.lora (up to maxLoras slots of rank <= maxRank). */
  lora?: { maxLoras: number; maxRank: number };
}
