// Messages between the engine core and a compile-trial worker (grammar-trial-worker.ts): the
// worker compiles an untrusted spec once, in an xgrammar instance of its own, and says whether
// it compiled, was refused (the client's 400) or trapped (the worker is then discarded).

import type { ConstraintSpec } from './grammar-spec';

export interface TrialWorkerData {
  vocab: string[];
  stopTokenIds: number[];
  /** The WASM heap cap of the worker's xgrammar instance. */
  heapMaxBytes: number;
}

export interface TrialCommand {
  id: number;
  spec: ConstraintSpec;
}

export type TrialReply =
  | { type: 'ready' }
  | { type: 'startup-error'; error: string }
  | { type: 'passed'; id: number }
  | { type: 'refused'; id: number; message: string; param: string | null }
  | { type: 'trapped'; id: number; message: string };
