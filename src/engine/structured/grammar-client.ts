// The engine core's side of the grammar worker thread: compiles constraints there and gives
// the sampler RemoteConstraints whose masks the worker fills in shared memory while the core
// runs the model. Nothing here blocks the core's thread: compiles are messages, and the wait
// for a step's masks (usually already written when the forward pass ends) is Atomics.waitAsync.

import type { Worker } from 'node:worker_threads';
import { RequestValidationError } from '../errors';
import type { SequenceConstraint } from '../sampling/logits-processor';
import { startWorkerThread } from '../worker/worker-thread';
import type { CompileStats } from './grammar-compiler';
import { DEFAULT_GRAMMAR_CACHE_SIZE } from './grammar-compiler';
import { uncompilableError } from './grammar-builder';
import { applyBitmask } from './grammar-constraint';
import { SLOT_ENDED, SLOT_READY, SLOT_UNREACHABLE, slotWords, type GrammarCommand, type GrammarJob, type GrammarReply, type GrammarWorkerData } from './grammar-protocol';
import type { ConstraintSpec } from './grammar-spec';

interface PendingCompile {
  resolve(constraints: RemoteConstraint[]): void;
  reject(err: Error): void;
  command: Extract<GrammarCommand, { type: 'compile' }>;
  /** Workers lost while it was in one: sent again once, then refused (it may be what kills them). */
  losses: number;
}

type WaitAsync = (array: Int32Array, index: number, value: number, timeoutMs?: number) => { async: boolean; value: Promise<string> | string };

/** What a fresh grammar worker is started with (its control word is new each time). */
type WorkerSetup = Omit<GrammarWorkerData, 'control'>;

function spawnGrammarWorker(setup: WorkerSetup): Promise<{ worker: Worker; control: SharedArrayBuffer }> {
  const control = new SharedArrayBuffer(4);
  const worker = startWorkerThread(__dirname, 'grammar-worker', { ...setup, control } satisfies GrammarWorkerData);
  return new Promise((resolve, reject) => {
    const onStart = (reply: GrammarReply) => {
      if (reply.type === 'ready') resolve({ worker, control });
      else if (reply.type === 'startup-error') reject(new Error(`grammar worker failed to start: ${reply.error}`));
      else return;
      worker.off('message', onStart);
    };
    worker.on('message', onStart);
    worker.once('error', reject);
  });
}

/**
 * If the worker dies (a trap while compiling a spec that passed its trial, memory), a fresh one
 * replaces it: compiles waiting for an answer are sent again, and the sequences whose matchers
 * were in the lost worker end with an error at their next mask; later requests are unaffected.
 */
export class GrammarClient {
  private worker!: Worker;
  private control!: Int32Array;
  private readonly words: number;
  private slots: Int32Array<ArrayBufferLike> = new Int32Array(0);
  private readonly compiles = new Map<string, PendingCompile>();
  /** Constraints that asked for their next mask since the last flush. */
  private batch: RemoteConstraint[] = [];
  /** Slots the batch takes (a constraint with drafts takes one per position it may sample). */
  private batchSlots = 0;
  private batchDone: Promise<void> | null = null;
  private step = 0;
  /** Constraints done with, sent with the next step (or on their own when no step comes soon). */
  private disposals: number[] = [];
  /** Counts worker replacements; a constraint belongs to the worker of its generation. */
  private generation = 0;
  /** Set while a replacement worker starts. */
  private restarting: Promise<void> | null = null;
  private dead: Error | null = null;
  private closed = false;
  private stats: CompileStats = { compileSeconds: [], cacheHits: 0, cacheMisses: 0 };

  private constructor(
    readonly vocabSize: number,
    private readonly stopTokenIds: ReadonlySet<number>,
    private readonly setup: WorkerSetup,
  ) {
    this.words = slotWords(vocabSize);
  }

  /** Starts the worker with the model's byte-level vocabulary (xgrammar's tokenizer info is built there, once). */
  static async start(vocab: string[], eosTokenIds: readonly number[], cacheSize = DEFAULT_GRAMMAR_CACHE_SIZE): Promise<GrammarClient> {
    const setup: WorkerSetup = { vocab, stopTokenIds: [...eosTokenIds], cacheSize };
    const client = new GrammarClient(vocab.length, new Set(eosTokenIds), setup);
    const { worker, control } = await spawnGrammarWorker(setup);
    client.attach(worker, control);
    return client;
  }

  /** One constraint per completion; rejects with RequestValidationError when xgrammar refuses the spec. */
  compile(requestId: string, spec: ConstraintSpec, count: number, enabled = true): Promise<RemoteConstraint[]> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise((resolve, reject) => {
      const command = { type: 'compile' as const, requestId, spec, count, enabled };
      this.compiles.set(requestId, { resolve, reject, command, losses: 0 });
      if (!this.restarting) this.post(command);
    });
  }

  drainStats(): CompileStats {
    const out = this.stats;
    this.stats = { compileSeconds: [], cacheHits: 0, cacheMisses: 0 };
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.restarting;
    await this.worker.terminate();
  }

  /** Called by RemoteConstraint.prepare(): joins this step's batch, flushed once the caller's loop is done. */
  requestMask(constraint: RemoteConstraint): Promise<void> {
    if (this.dead) return Promise.reject(this.dead);
    if (constraint.generation !== this.generation) return Promise.reject(new Error('structured outputs: the grammar worker failed and was replaced; this sequence\'s grammar state is lost'));
    if (this.batch.length === 0) {
      this.batchDone = new Promise<void>((resolve, reject) => queueMicrotask(() => void this.flush().then(resolve, reject)));
    }
    constraint.slot = this.batchSlots;
    this.batchSlots += constraint.positions;
    this.batch.push(constraint);
    return this.batchDone!;
  }

  /** Reads a slot: applies the mask, or throws when the worker refused the sequence's tokens. */
  applySlot(slot: number, scores: Float32Array): void {
    const at = slot * this.words;
    const status = this.slots[at];
    if (status === SLOT_UNREACHABLE) throw new Error('structured outputs: no grammar mask prepared for this position (past a draft the grammar rejected)');
    if (status !== SLOT_READY) throw new Error('structured outputs: the grammar rejected a sampled token');
    applyBitmask(scores, this.slots, at + 1, this.vocabSize);
  }

  /** Of the drafts whose masks fill slots `slot + 1 ..`, how many the grammar accepted in order (read once they are written). */
  draftsTaken(slot: number, numDrafts: number): number {
    let taken = 0;
    while (taken < numDrafts) {
      const status = this.slots[(slot + taken + 1) * this.words];
      if (status !== SLOT_READY && status !== SLOT_ENDED) break;
      taken++;
    }
    return taken;
  }

  /** Frees a constraint's matcher in the worker (batched: one message per step, not per sequence). */
  dispose(id: number, generation: number): void {
    if (this.dead || generation !== this.generation) return;
    this.disposals.push(id);
    if (this.disposals.length > 1) return;
    setImmediate(() => {
      if (this.disposals.length === 0 || this.dead || this.restarting) return;
      this.post({ type: 'dispose', ids: this.disposals });
      this.disposals = [];
    });
  }

  isStopToken(token: number): boolean {
    return this.stopTokenIds.has(token);
  }

  private attach(worker: Worker, control: SharedArrayBuffer): void {
    this.worker = worker;
    this.control = new Int32Array(control);
    this.step = 0;
    this.slots = new Int32Array(0);
    worker.on('message', (reply: GrammarReply) => this.onReply(reply));
    worker.on('error', (err) => this.lost(worker, err));
    worker.on('exit', (code) => this.lost(worker, new Error(`exited (code ${code})`)));
  }

  private async flush(): Promise<void> {
    const batch = this.batch;
    const numSlots = this.batchSlots;
    this.batch = [];
    this.batchSlots = 0;
    const generation = this.generation;
    if (this.restarting || batch.some((c) => c.generation !== generation)) throw new Error('structured outputs: the grammar worker failed and was replaced');
    let grown: SharedArrayBuffer | undefined;
    if (numSlots * this.words > this.slots.length) {
      grown = new SharedArrayBuffer(Math.max(numSlots, 2 * this.slots.length / this.words) * this.words * 4);
      this.slots = new Int32Array(grown);
    }
    const jobs: GrammarJob[] = batch.map((c) => c.takeJob());
    const step = ++this.step;
    const dispose = this.disposals;
    this.disposals = [];
    this.post({ type: 'step', step, jobs, ...(grown ? { slots: grown } : {}), ...(dispose.length > 0 ? { dispose } : {}) });
    await this.waitForStep(step, generation);
  }

  private async waitForStep(step: number, generation: number): Promise<void> {
    const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;
    const control = this.control;
    for (;;) {
      const done = Atomics.load(control, 0);
      if (done >= step) return;
      if (this.dead) throw this.dead;
      if (generation !== this.generation) throw new Error('structured outputs: the grammar worker failed during this step');
      const result = waitAsync(control, 0, done, 1000);
      if (result.async) await result.value;
    }
  }

  private post(command: GrammarCommand): void {
    this.worker.postMessage(command);
  }

  private onReply(reply: GrammarReply): void {
    if (reply.type !== 'compiled' && reply.type !== 'compile-failed') return;
    const pending = this.compiles.get(reply.requestId);
    if (!pending) return;
    this.compiles.delete(reply.requestId);
    if (reply.type === 'compile-failed') {
      pending.reject(reply.name === 'RequestValidationError' ? new RequestValidationError(reply.message, reply.param) : new Error(reply.message));
      return;
    }
    if (reply.seconds === null) this.stats.cacheHits++;
    else {
      this.stats.cacheMisses++;
      this.stats.compileSeconds.push(reply.seconds);
    }
    pending.resolve(reply.ids.map((id) => new RemoteConstraint(this, id, this.generation, pending.command.enabled)));
  }

  /** The worker died: start a fresh one and send it the compiles still waiting. */
  private lost(worker: Worker, err: Error): void {
    if (worker !== this.worker || this.closed || this.dead) return;
    worker.removeAllListeners();
    void worker.terminate();
    console.warn(`[structured-outputs] the grammar worker failed (${err.message}); starting a fresh one`);
    this.generation++;
    this.disposals = [];
    // Wakes a step waiting on the dead worker's control word: it sees the new generation and fails.
    Atomics.notify(this.control, 0);
    this.restarting = spawnGrammarWorker(this.setup).then(
      ({ worker: fresh, control }) => {
        this.restarting = null;
        if (this.closed) {
          void fresh.terminate();
          return;
        }
        this.attach(fresh, control);
        for (const [requestId, pending] of this.compiles) {
          if (++pending.losses < 2) {
            this.post(pending.command);
            continue;
          }
          this.compiles.delete(requestId);
          pending.reject(uncompilableError(pending.command.spec, 'the grammar engine failed on it'));
        }
      },
      (startErr: Error) => {
        this.restarting = null;
        this.dead = new Error(`grammar worker failed: ${startErr.message}`);
        for (const pending of this.compiles.values()) pending.reject(this.dead);
        this.compiles.clear();
      },
    );
  }
}

const NO_DRAFTS: readonly number[] = [];

/**
 * A sequence's constraint whose matcher lives in the grammar worker. Tokens it accepts are
 * sent with the next mask request; `terminated` is known here: the grammar only allows a stop
 * token once its parse is complete, so accepting one ends it. With drafts, the request takes a
 * slot per position and apply() reads the slot of the tokens accepted since prepare().
 */
export class RemoteConstraint implements SequenceConstraint {
  readonly hard = true;
  /** Slot of the mask requested for the coming sample (set by GrammarClient.requestMask). */
  slot = -1;
  private pending: number[] = [];
  /** The drafts of the coming step's mask request. */
  private drafts: readonly number[] = NO_DRAFTS;
  /** Tokens accepted since prepare(): the position (slot offset) apply() reads. */
  private position = 0;
  /** Slots the last mask request took. */
  private requested = 0;
  private enableSent: boolean;
  private ended = false;
  private disposed = false;

  constructor(
    private readonly client: GrammarClient,
    readonly id: number,
    /** The worker generation holding its matcher (GrammarClient replaces a failed worker). */
    readonly generation: number,
    private active: boolean,
  ) {
    this.enableSent = active;
  }

  get enabled(): boolean {
    return this.active;
  }

  get terminated(): boolean {
    return this.ended;
  }

  enable(): void {
    this.active = true;
  }

  /** Asks for the masks of the next token and of the positions after `drafts` (see GrammarJob.drafts). */
  prepare(drafts: readonly number[] = NO_DRAFTS): Promise<void> | void {
    this.position = 0;
    this.requested = 0;
    if (!this.active || this.ended || this.disposed) return;
    this.drafts = drafts;
    this.requested = 1 + drafts.length;
    return this.client.requestMask(this);
  }

  /** Of the drafts given to the last prepare(), how many the grammar accepts in order (once its masks are ready). */
  get draftsTaken(): number {
    return this.requested > 0 ? this.client.draftsTaken(this.slot, this.requested - 1) : 0;
  }

  /** Slots the coming mask request takes. */
  get positions(): number {
    return 1 + this.drafts.length;
  }

  apply(scores: Float32Array): void {
    if (!this.active) return;
    if (this.position >= this.requested) throw new Error('structured outputs: no grammar mask prepared for this position');
    this.client.applySlot(this.slot + this.position, scores);
  }

  accept(tokenId: number): void {
    if (!this.active || this.ended) return;
    this.position++;
    this.pending.push(tokenId);
    if (this.client.isStopToken(tokenId)) this.ended = true;
  }

  /** The job for this step's message: tokens to accept, a pending enable, the mask slot, the drafts. */
  takeJob(): GrammarJob {
    const job: GrammarJob = { id: this.id, accept: this.pending, enable: this.active && !this.enableSent, slot: this.slot, drafts: this.drafts };
    this.pending = [];
    this.drafts = NO_DRAFTS;
    this.enableSent = this.active;
    return job;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.client.dispose(this.id, this.generation);
  }
}
