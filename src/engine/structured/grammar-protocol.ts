// Messages between the engine core and its grammar worker thread (grammar-worker.ts).
//
// The bitmasks travel through shared memory, not messages: per step the core posts the tokens
// each constrained sequence accepted since the last step and a slot for its next mask, then
// runs the model (onnxruntime-node runs it synchronously on the core's thread) while the
// worker fills the slots; it publishes the step number in `control[0]` when all are written.
// Speculative decoding: a job with drafts takes one slot per position it may sample (see GrammarJob.drafts).

import type { ConstraintSpec } from './grammar-spec';

/** Slot status word, followed by the slot's mask words. */
export const SLOT_READY = 0;
export const SLOT_REJECTED = 1;
/** A draft position the grammar cannot reach (an earlier draft is not in the language): no mask. */
export const SLOT_UNREACHABLE = 2;
/** The draft before this position ended the grammar (a stop token it allows): nothing follows, no mask. */
export const SLOT_ENDED = 3;

export interface GrammarJob {
  /** Constraint id (from 'compiled'). */
  id: number;
  /** Tokens sampled since the last job of this constraint, in order. */
  accept: number[];
  /** Start constraining from now on (a constraint created disabled, see SequenceConstraint.enabled). */
  enable: boolean;
  /** Where to write the next mask. */
  slot: number;
  /**
   * Tokens drafted after the accepted ones. Slot `slot + j` gets the mask after drafts 0..j-1,
   * up to the first draft the grammar rejects or that ends it (the slot after a draft that ends
   * it is SLOT_ENDED, the later ones SLOT_UNREACHABLE); the matcher is then rolled back to stand
   * after `accept`.
   */
  drafts: readonly number[];
}

export type GrammarCommand =
  | { type: 'compile'; requestId: string; spec: ConstraintSpec; count: number; enabled: boolean }
  /** `slots`: a new (larger) slot buffer, sent when the previous one became too small. `dispose`: constraints done with. */
  | { type: 'step'; step: number; jobs: GrammarJob[]; slots?: SharedArrayBuffer; dispose?: number[] }
  | { type: 'dispose'; ids: number[] };

export type GrammarReply =
  | { type: 'ready' }
  | { type: 'startup-error'; error: string }
  /** `seconds`: compile time, or null on a cache hit. */
  | { type: 'compiled'; requestId: string; ids: number[]; seconds: number | null }
  | { type: 'compile-failed'; requestId: string; message: string; param: string | null; name: string };

export interface GrammarWorkerData {
  /** byteLevelVocab() of the model; its length is the logits width. */
  vocab: string[];
  stopTokenIds: number[];
  cacheSize: number;
  /** Int32Array(1): the last step whose masks are written. */
  control: SharedArrayBuffer;
}

/** Int32 words one slot takes: the status word and the mask. */
export function slotWords(vocabSize: number): number {
  return 1 + Math.ceil(vocabSize / 32);
}
