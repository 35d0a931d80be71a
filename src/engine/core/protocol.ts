// Messages between the HTTP thread (EngineFrontend) and the engine core (worker or
// in-process). All are small structured-clone objects.

import type { EngineOptions, EngineRequest, IterationStats, RequestOutput, SchedulerStats } from '../types';

/** What the core tells the frontend once it is running. */
export interface CoreInfo {
  numBlocks: number;
  blockSize: number;
  /** Effective max_model_len (may be lowered to what the KV cache holds). */
  maxModelLen: number;
}

export type CoreEvent =
  /**
   * One engine step: its outputs, the scheduler state after it and its stats. One message per
   * step: on a busy machine each message that wakes the HTTP thread costs the worker its time slice.
   * From a worker, outputs come with empty promptTokenIds (the frontend fills them in).
   */
  | { type: 'step'; outputs: RequestOutput[]; stats: SchedulerStats; iteration: IterationStats }
  /** The core refused a request the frontend let through (RequestValidationError there). */
  | { type: 'rejected'; requestId: string; message: string; param: string | null; name: string }
  | { type: 'dead'; error: string };

export type CoreCommand =
  | { type: 'add'; request: EngineRequest }
  | { type: 'abort'; requestIds: string[] }
  | { type: 'pause'; requestIds: string[] }
  | { type: 'resume'; requestIds: string[] }
  | { type: 'shutdown' };

/** Worker → HTTP thread, besides CoreEvents. */
export type WorkerStartupMessage = { type: 'ready'; info: CoreInfo } | { type: 'startup-error'; error: string };

export interface WorkerData {
  options: EngineOptions;
}

/** The frontend's handle on a running core. */
export interface CoreConnection {
  readonly info: CoreInfo;
  add(request: EngineRequest): void;
  abort(requestIds: string[]): void;
  /** Sets requests aside while their clients are not reading (EngineCore.pause), or takes them back. */
  pause(requestIds: string[]): void;
  resume(requestIds: string[]): void;
  shutdown(): Promise<void>;
}
