// Requests with structured_outputs wait here until their grammar is compiled, then join the
// scheduler with one matcher per completion. Compilation never runs inside a step's
// sampling: the engine calls run() while the model computes a step (the forward pass runs
// on onnxruntime's threads, this thread is free), or right away when the engine is idle.
// One compile per step at least, so constrained requests always progress; more while the
// forward pass is still running. The LRU cache makes repeated schemas free.
//
// xgrammar has no way to hand a compiled grammar to another thread (no serialisation in its
// WASM build), so compiling in a separate worker is not an option: matchers must live in the
// thread that samples.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { RequestValidationError } from '../errors';
import type { SequenceConstraint } from '../sampling/logits-processor';
import type { EngineRequest } from '../types';
import { resolveConstraint, type ConstraintSpec, type StructuredOutputsDefaults } from '../structured/grammar-spec';
import type { CompileStats, StructuredOutputCompiler } from '../structured/grammar-compiler';

interface PendingRequest {
  request: EngineRequest;
  spec: ConstraintSpec;
}

export interface GrammarAdmissionHandlers {
  /** The grammar is ready: one constraint per completion (best_of ?? n). */
  admit(request: EngineRequest, constraints: SequenceConstraint[]): void;
  /** The grammar failed to compile (RequestValidationError) or the engine failed. */
  reject(request: EngineRequest, err: unknown): void;
}

export class GrammarAdmission {
  private readonly pending: PendingRequest[] = [];
  /** The request being compiled (its matchers are created asynchronously) and whether it was aborted meanwhile. */
  private inFlight: { request: EngineRequest; removed: boolean } | null = null;

  constructor(
    private readonly compiler: StructuredOutputCompiler | null,
    private readonly defaults: StructuredOutputsDefaults,
    private readonly handlers: GrammarAdmissionHandlers,
  ) {}

  get size(): number {
    return this.pending.length + (this.inFlight ? 1 : 0);
  }

  /** Queues a request with structured_outputs; throws RequestValidationError for a bad spec. */
  enqueue(request: EngineRequest): void {
    if (!this.compiler) {
      throw new RequestValidationError('Structured outputs need a tokenizer; this server runs without one (--skip-tokenizer-init).', 'structured_outputs');
    }
    this.pending.push({ request, spec: resolveConstraint(request.params.structured_outputs!, this.defaults) });
  }

  has(requestId: string): boolean {
    return this.inFlight?.request.requestId === requestId || this.pending.some((p) => p.request.requestId === requestId);
  }

  /** Removes a waiting request (abort); returns it, or null when it was not waiting. */
  remove(requestId: string): EngineRequest | null {
    if (this.inFlight?.request.requestId === requestId && !this.inFlight.removed) {
      this.inFlight.removed = true;
      return this.inFlight.request;
    }
    const at = this.pending.findIndex((p) => p.request.requestId === requestId);
    return at < 0 ? null : this.pending.splice(at, 1)[0].request;
  }

  /** Compiles one waiting grammar, then more until `forward` settles (null: all of them). */
  async run(forward: Promise<unknown> | null): Promise<void> {
    if (this.pending.length === 0) return;
    let settled = forward === null;
    forward?.then(
      () => (settled = true),
      () => (settled = true),
    );
    do {
      await this.compileNext();
      // Lets the forward pass's completion (and add / abort messages) be seen between compiles.
      await yieldToEventLoop();
    } while (this.pending.length > 0 && (forward === null || !settled));
  }

  drainStats(): CompileStats | null {
    return this.compiler?.drainStats() ?? null;
  }

  private async compileNext(): Promise<void> {
    const next = this.pending.shift();
    if (!next) return;
    const { request, spec } = next;
    const flight = { request, removed: false };
    this.inFlight = flight;
    const constraints: SequenceConstraint[] = [];
    try {
      const compiled = this.compiler!.compile(spec);
      const count = request.params.best_of ?? request.params.n;
      for (let i = 0; i < count; i++) constraints.push(await this.compiler!.createConstraint(compiled));
    } catch (err) {
      for (const c of constraints) c.dispose();
      if (!flight.removed) this.handlers.reject(request, err);
      return;
    } finally {
      this.inFlight = null;
    }
    if (flight.removed) {
      for (const c of constraints) c.dispose();
      return;
    }
    this.handlers.admit(request, constraints);
  }
}
