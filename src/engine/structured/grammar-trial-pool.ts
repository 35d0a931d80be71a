// Compile trials of untrusted specs, in worker threads apart from the one that holds the live
// matchers (grammar-worker.ts). A spec reaches the matcher worker only after it compiled here
// under the time and memory budget, so a spec that traps xgrammar, runs away or exhausts the
// heap costs a discarded trial worker, never the matchers of requests already running.
// Specs that passed are remembered (by hash): a repeat skips the trial.

import { createHash } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../worker/worker-thread';
import { uncompilableError } from './grammar-builder';
import type { StructuredOutputsLimits } from './grammar-limits';
import type { ConstraintSpec } from './grammar-spec';
import type { TrialReply, TrialWorkerData } from './grammar-trial-protocol';
import { RequestValidationError } from '../errors';

/** Hashes of the specs that passed, kept (most recent last). */
const PASSED_KEPT = 4096;
/** The worker's JavaScript heap (the vocabulary, messages); xgrammar's WASM heap is capped apart. */
const JS_HEAP_MB = 256;

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

interface Trial {
  key: string;
  spec: ConstraintSpec;
  waiters: Set<Waiter>;
  /** Set while a worker runs it. */
  slot: TrialSlot | null;
}

/** A request's interest in a trial: `done` settles with it; `cancel` drops the interest. */
export interface TrialTicket {
  done: Promise<void>;
  cancel: () => void;
}

export class GrammarTrialPool {
  private readonly passed = new Map<string, true>();
  private readonly queue: Trial[] = [];
  private readonly trials = new Map<string, Trial>();
  private readonly slots: TrialSlot[] = [];
  private closed = false;

  constructor(
    private readonly data: TrialWorkerData,
    private readonly limits: StructuredOutputsLimits,
  ) {
    for (let i = 0; i < limits.compileWorkers; i++) this.slots.push(new TrialSlot(this.data, () => this.pump()));
  }

  static create(vocab: string[], stopTokenIds: readonly number[], limits: StructuredOutputsLimits): GrammarTrialPool {
    return new GrammarTrialPool({ vocab, stopTokenIds: [...stopTokenIds], heapMaxBytes: limits.compileMemoryMb * 2 ** 20 }, limits);
  }

  /** Settles when the spec compiled (or compiled before); rejects with RequestValidationError when it cannot. */
  check(spec: ConstraintSpec): TrialTicket {
    const key = createHash('sha256').update(spec.key).digest('base64');
    if (this.passed.delete(key)) {
      this.passed.set(key, true);
      return { done: Promise.resolve(), cancel: () => undefined };
    }
    let trial = this.trials.get(key);
    if (!trial) {
      trial = { key, spec, waiters: new Set(), slot: null };
      this.trials.set(key, trial);
      this.queue.push(trial);
    }
    const owner = trial;
    let waiter!: Waiter;
    const done = new Promise<void>((resolve, reject) => (waiter = { resolve, reject }));
    owner.waiters.add(waiter);
    this.pump();
    return { done, cancel: () => this.cancel(owner, waiter) };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.close()));
  }

  /** A trial no request waits for any more is dropped; a running one stops with its worker. */
  private cancel(trial: Trial, waiter: Waiter): void {
    if (!trial.waiters.delete(waiter)) return;
    waiter.reject(CANCELLED);
    if (trial.waiters.size > 0) return;
    this.trials.delete(trial.key);
    if (trial.slot) trial.slot.abandon();
    else this.queue.splice(this.queue.indexOf(trial), 1);
  }

  private pump(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (!slot.idle) continue;
      const trial = this.queue.shift()!;
      trial.slot = slot;
      void slot.run(trial.spec, this.limits.compileTimeoutSeconds * 1000).then((outcome) => this.settle(trial, outcome));
    }
  }

  private settle(trial: Trial, outcome: Error | null): void {
    trial.slot = null;
    if (this.trials.get(trial.key) === trial) this.trials.delete(trial.key);
    if (!outcome) {
      this.passed.set(trial.key, true);
      if (this.passed.size > PASSED_KEPT) this.passed.delete(this.passed.keys().next().value as string);
    }
    for (const waiter of trial.waiters) {
      if (outcome) waiter.reject(outcome);
      else waiter.resolve();
    }
    this.pump();
  }
}

/**
 * One trial worker at a time: started before it is needed, replaced after a trap, a timeout,
 * an exhausted heap or an abandoned run. `run` resolves to null (compiled) or the client's error.
 */
class TrialSlot {
  private worker: Worker | null = null;
  private ready: Promise<Worker> | null = null;
  private busy = false;
  private abandoned = false;
  private finish: ((outcome: Error | null) => void) | null = null;
  private nextId = 1;

  constructor(
    private readonly data: TrialWorkerData,
    private readonly onIdle: () => void,
  ) {
    this.ready = this.spawn();
    this.ready.catch(() => undefined);
  }

  get idle(): boolean {
    return !this.busy;
  }

  async run(spec: ConstraintSpec, timeoutMs: number): Promise<Error | null> {
    this.busy = true;
    this.abandoned = false;
    try {
      const worker = await (this.ready ??= this.spawn());
      if (this.abandoned) return CANCELLED;
      return await this.trial(worker, spec, timeoutMs);
    } catch (err) {
      this.ready = null;
      return new Error(`structured outputs: a compile worker failed to start: ${(err as Error).message}`);
    } finally {
      this.busy = false;
      queueMicrotask(this.onIdle);
    }
  }

  /** The request that waited for the running trial left: stop it. */
  abandon(): void {
    if (this.finish) this.discard(CANCELLED);
    else this.abandoned = true;
  }

  async close(): Promise<void> {
    const worker = this.worker ?? (await this.ready?.catch(() => null));
    this.worker = null;
    this.ready = null;
    await worker?.terminate();
  }

  private trial(worker: Worker, spec: ConstraintSpec, timeoutMs: number): Promise<Error | null> {
    const id = this.nextId++;
    const failed = (why: string, detail: string) => {
      console.warn(`[structured-outputs] a ${spec.kind} constraint could not be compiled (${why}; compile worker replaced): ${detail}`);
    };
    const onMessage = (reply: TrialReply) => {
      if (!('id' in reply) || reply.id !== id) return;
      if (reply.type === 'passed') this.finish?.(null);
      else if (reply.type === 'refused') this.finish?.(new RequestValidationError(reply.message, reply.param));
      else {
        failed('xgrammar trapped', reply.message);
        this.discard(uncompilableError(spec, 'the grammar engine failed on it'));
      }
    };
    const onError = (err: Error) => {
      failed('worker error', err.message);
      this.discard(uncompilableError(spec, /memory/i.test(err.message) ? 'it needs more memory than allowed' : 'the grammar engine failed on it'));
    };
    const onExit = (code: number) => {
      failed('worker exit', `code ${code}`);
      this.discard(uncompilableError(spec, 'the grammar engine failed on it'));
    };
    return new Promise<Error | null>((resolve) => {
      const timer = setTimeout(() => {
        failed('time budget', `over ${timeoutMs} ms`);
        this.discard(uncompilableError(spec, `it took longer than ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.finish = (outcome) => {
        clearTimeout(timer);
        this.finish = null;
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(outcome);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage({ id, spec });
    });
  }

  /** Ends the running trial with `outcome` and replaces the worker (it may be corrupt or still busy). */
  private discard(outcome: Error): void {
    const worker = this.worker;
    this.worker = null;
    this.finish?.(outcome);
    void worker?.terminate();
    this.ready = this.spawn();
    this.ready.catch(() => undefined);
  }

  private spawn(): Promise<Worker> {
    const worker = startWorkerThread(__dirname, 'grammar-trial-worker', this.data, [], { resourceLimits: { maxOldGenerationSizeMb: JS_HEAP_MB } });
    // An idle worker's failure only means the next trial starts a fresh one.
    worker.on('error', () => undefined);
    return new Promise<Worker>((resolve, reject) => {
      const onStart = (reply: TrialReply) => {
        if (reply.type === 'ready') resolve(worker);
        else if (reply.type === 'startup-error') reject(new Error(reply.error));
        else return;
        worker.off('message', onStart);
        worker.off('exit', onExitEarly);
      };
      const onExitEarly = (code: number) => reject(new Error(`exited with code ${code}`));
      worker.on('message', onStart);
      worker.once('exit', onExitEarly);
    }).then((w) => {
      this.worker = w;
      w.once('exit', () => {
        if (this.worker === w && !this.finish) {
          this.worker = null;
          this.ready = null;
        }
      });
      return w;
    });
  }
}

const CANCELLED = new Error('structured outputs: the compile was cancelled');
