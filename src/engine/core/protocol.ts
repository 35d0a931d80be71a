// Messages between the HTTP thread (EngineFrontend) and the engine core (worker or
// in-process). All are small structured-clone objects.

import type { MessagePort } from 'node:worker_threads';
import type { EncodeRequest, EngineOptions, EngineRequest, IterationStats, RequestOutput, SchedulerStats, SleepLevel, SleepMode } from '../types';

/** Engine-wide operations the frontend asks the core for and awaits (dev endpoints). */
export type ControlOp = { op: 'sleep'; level: SleepLevel; mode: SleepMode } | { op: 'wake' } | { op: 'reset_prefix_cache' };

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
  | { type: 'step'; outputs: RequestOutput[]; pooled?: PooledResult[]; stats: SchedulerStats; iteration: IterationStats }
  /** The core refused a request the frontend let through (RequestValidationError there). */
  | { type: 'rejected'; requestId: string; message: string; param: string | null; name: string }
  | { type: 'dead'; error: string }
  /** A control operation finished (error = its failure message). */
  | { type: 'control-done'; callId: number; error: string | null };

/** One finished pooling request of a step: its vector, or why it failed. */
export type PooledResult = { requestId: string; data: Float32Array } | { requestId: string; error: string };

export type CoreCommand =
  | { type: 'add'; request: EngineRequest }
  | { type: 'encode'; request: EncodeRequest }
  | { type: 'abort'; requestIds: string[] }
  | { type: 'pause'; requestIds: string[] }
  | { type: 'resume'; requestIds: string[] }
  | { type: 'control'; callId: number; op: ControlOp }
  | { type: 'shutdown' };

/** Worker → HTTP thread, besides CoreEvents. */
export type WorkerStartupMessage = { type: 'ready'; info: CoreInfo } | { type: 'startup-error'; error: string };

export interface WorkerData {
  options: EngineOptions;
  /** Where the worker posts its CoreEvents (spawn-worker.ts says why they have a port of their own). */
  events: MessagePort;
}

/** The frontend's handle on a running core. */
export interface CoreConnection {
  readonly info: CoreInfo;
  add(request: EngineRequest): void;
  encode(request: EncodeRequest): void;
  abort(requestIds: string[]): void;
  /** Sets requests aside while their clients are not reading (EngineCore.pause), or takes them back. */
  pause(requestIds: string[]): void;
  resume(requestIds: string[]): void;
  control(op: ControlOp): Promise<void>;
  shutdown(): Promise<void>;
}
