// Messages between the HTTP thread (EngineFrontend) and the engine core (worker or
// in-process). All are small structured-clone objects.

import type { MessagePort } from 'node:worker_threads';
import type { EncodeRequest, EngineOptions, EngineRequest, IterationStats, LoraRequest, RequestOutput, SchedulerStats, SleepLevel, SleepMode } from '../types';

/** How a command travels: 'send' is posted and forgotten; 'call' is awaited until the core's 'command-done'. */
export type CommandKind = 'send' | 'call';

/** One entry of ENGINE_COMMANDS. `payload` and `result` only carry types (a 'call''s answer); they are never set. */
export interface CommandSpec<Payload, Kind extends CommandKind, Result = void> {
  readonly kind: Kind;
  readonly payload?: Payload;
  readonly result?: Result;
}

const send = <Payload>(): CommandSpec<Payload, 'send'> => ({ kind: 'send' });
const call = <Payload = void, Result = void>(): CommandSpec<Payload, 'call', Result> => ({ kind: 'call' });

/**
 * Every operation the frontend asks of the engine core, declared once. The core's handlers
 * (EngineCommands, implemented by EngineCoreHost), the wire messages (CoreCommand), the worker's
 * dispatch and both connections (command-wire.ts, in-process) are derived from this table.
 */
export const ENGINE_COMMANDS = {
  /** Queues a generation request (a pooling core refuses it with a 'rejected' event). */
  add: send<EngineRequest>(),
  /** Queues a pooling request (a generation core refuses it). */
  encode: send<EncodeRequest>(),
  abort: send<string[]>(),
  /** Sets aside requests whose clients are not reading (EngineCore.pause); resume takes them back. */
  pause: send<string[]>(),
  resume: send<string[]>(),
  /** Frees the runner (and at level 2 the weights) once the core is idle; mode 'abort' ends what runs. */
  sleep: call<{ level: SleepLevel; mode: SleepMode }>(),
  /** Rebuilds the runner after sleep (a no-op when awake). */
  wakeUp: call(),
  resetPrefixCache: call(),
  /** What the prefix cache holds now, hashes as KV events send them (a dev route compares it with a subscriber's view). */
  kvCachedBlocks: call<void, import('../kv-events/kv-event-groups').KvCachedBlocks>(),
  /** Reads and checks a LoRA adapter, keeping it for the requests naming its id (fails with the LoraLoadError's message). */
  loadLora: call<LoraRequest>(),
  /** Forgets an adapter; requests already queued with it finish with it. */
  unloadLora: call<{ id: number }>(),
  /** Stops the step loop and frees the runner; a worker exits afterwards. */
  shutdown: call(),
} as const;

export type CommandName = keyof typeof ENGINE_COMMANDS;
type Spec<K extends CommandName> = (typeof ENGINE_COMMANDS)[K];
type PayloadOf<K extends CommandName> = Spec<K> extends CommandSpec<infer Payload, CommandKind, unknown> ? Payload : never;
type ResultOf<K extends CommandName> = Spec<K> extends CommandSpec<unknown, CommandKind, infer Result> ? Result : never;

/** The core's side of each command: a 'send' returns nothing, a 'call' settles when done. */
export type EngineCommands = {
  [K in CommandName]: (payload: PayloadOf<K>) => Spec<K>['kind'] extends 'call' ? Promise<ResultOf<K>> : void;
};

/** A command on the wire; a 'call' carries the id its 'command-done' answers to. */
export type CoreCommand = {
  [K in CommandName]: Spec<K>['kind'] extends 'call' ? { type: K; payload: PayloadOf<K>; callId: number } : { type: K; payload: PayloadOf<K> };
}[CommandName];

/** What the core tells the frontend once it is running. */
export interface CoreInfo {
  numBlocks: number;
  blockSize: number;
  /** Blocks that bound one sequence's length when not numBlocks (every layer in a sliding-window pool). */
  kvCapacityBlocks?: number;
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
  /** A 'call' command finished (error = its failure message). */
  | { type: 'command-done'; callId: number; error: string | null; result?: unknown };

/** One finished pooling request of a step: its vector, or why it failed. */
export type PooledResult = { requestId: string; data: Float32Array } | { requestId: string; error: string };

/** Worker → HTTP thread, besides CoreEvents. */
export type WorkerStartupMessage = { type: 'ready'; info: CoreInfo } | { type: 'startup-error'; error: string };

export interface WorkerData {
  options: EngineOptions;
  /** Where the worker posts its CoreEvents (spawn-worker.ts says why they have a port of their own). */
  events: MessagePort;
}

/** The frontend's handle on a running core. */
export type CoreConnection = EngineCommands & { readonly info: CoreInfo };
