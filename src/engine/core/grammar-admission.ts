// Requests with structured_outputs wait here until their grammar is compiled, then join the
// scheduler with one constraint per completion. Compiling happens in the grammar worker thread
// (structured/grammar-client.ts): the step loop goes on meanwhile, and the request is admitted
// between two steps when the worker answers. (xgrammar's WASM build cannot hand a compiled
// grammar to another thread, so the matchers live in that worker too, not here.)

import { RequestValidationError } from '../errors';
import type { SequenceConstraint } from '../sampling/logits-processor';
import type { EngineRequest } from '../types';
import { resolveConstraint, type StructuredOutputsDefaults } from '../structured/grammar-spec';
import type { CompileStats } from '../structured/grammar-compiler';
import type { GrammarClient } from '../structured/grammar-client';

export interface GrammarAdmissionHandlers {
  /** The grammar is ready: one constraint per completion (best_of ?? n). */
  admit(request: EngineRequest, constraints: SequenceConstraint[]): void;
  /** The grammar failed to compile (RequestValidationError) or the grammar worker failed. */
  reject(request: EngineRequest, err: unknown): void;
}

export class GrammarAdmission {
  /** Requests whose grammar is compiling, and whether each was aborted meanwhile. */
  private readonly waiting = new Map<string, { request: EngineRequest; removed: boolean }>();

  constructor(
    private readonly grammars: GrammarClient | null,
    private readonly defaults: StructuredOutputsDefaults,
    private readonly handlers: GrammarAdmissionHandlers,
  ) {}

  /** Requests waiting for their grammar (aborted ones, whose compile is still running, not counted). */
  get size(): number {
    let n = 0;
    for (const w of this.waiting.values()) if (!w.removed) n++;
    return n;
  }

  /** Ids of the requests still waiting for their grammar (not yet aborted). */
  requestIds(): string[] {
    return [...this.waiting.values()].filter((w) => !w.removed).map((w) => w.request.requestId);
  }

  has(requestId: string): boolean {
    return this.waiting.has(requestId);
  }

  /** Starts compiling a request's grammar; throws RequestValidationError for a bad spec (nothing queued). */
  enqueue(request: EngineRequest): void {
    if (!this.grammars) {
      throw new RequestValidationError('Structured outputs need a tokenizer; this server runs without one (--skip-tokenizer-init).', 'structured_outputs');
    }
    const spec = resolveConstraint(request.params.structured_outputs!, this.defaults);
    const entry = { request, removed: false };
    this.waiting.set(request.requestId, entry);
    const count = request.params.best_of ?? request.params.n;
    // Waiting for the end of the reasoning: the constraints start disabled (the completion enables them).
    this.grammars.compile(request.requestId, spec, count, !request.structuredOutputsAfter).then(
      (constraints) => {
        this.waiting.delete(request.requestId);
        if (entry.removed) for (const c of constraints) c.dispose();
        else this.handlers.admit(request, constraints);
      },
      (err) => {
        this.waiting.delete(request.requestId);
        if (!entry.removed) this.handlers.reject(request, err);
      },
    );
  }

  /** Forgets a waiting request (abort); returns it, or null when it was not waiting. */
  remove(requestId: string): EngineRequest | null {
    const entry = this.waiting.get(requestId);
    if (!entry || entry.removed) return null;
    entry.removed = true;
    return entry.request;
  }

  drainStats(): CompileStats | null {
    return this.grammars?.drainStats() ?? null;
  }
}
