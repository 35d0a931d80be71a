// Requests with structured_outputs wait here until their grammar is compiled, then join the
// scheduler with one constraint per completion. A spec is first checked against the limits
// (plain TypeScript), then compiled once as a trial in a disposable worker under a time and
// memory budget (structured/grammar-trial-pool.ts), and only then compiled for its matchers in
// the grammar worker thread (structured/grammar-client.ts). The step loop goes on meanwhile;
// the request is admitted between two steps. (xgrammar's WASM build cannot hand a compiled
// grammar to another thread, hence the second compile, which the matcher worker's cache hides
// for repeated specs.)

import { RequestValidationError } from '../errors';
import type { SequenceConstraint } from '../sampling/logits-processor';
import type { EngineRequest } from '../types';
import { resolveConstraint, type StructuredOutputsDefaults } from '../structured/grammar-spec';
import type { CompileStats } from '../structured/grammar-compiler';
import { GrammarClient } from '../structured/grammar-client';
import { checkGrammarBounds } from '../structured/grammar-bounds';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../structured/grammar-limits';
import { GrammarTrialPool } from '../structured/grammar-trial-pool';
import { byteLevelVocab } from '../structured/tokenizer-info';
import type { Tokenizer } from '../../model/types';

/** What compiles grammars: the matcher worker and the trial pool (null without a tokenizer). */
export interface GrammarEngines {
  client: GrammarClient;
  trials: GrammarTrialPool;
}

/** Starts the matcher worker and the trial pool, both with xgrammar's view of the vocabulary (built once). */
export async function startGrammarEngines(
  tokenizer: Tokenizer,
  vocabSize: number,
  eosTokenIds: readonly number[],
  limits: StructuredOutputsLimits = DEFAULT_STRUCTURED_OUTPUTS_LIMITS,
): Promise<GrammarEngines> {
  const vocab = byteLevelVocab(tokenizer, vocabSize);
  return { client: await GrammarClient.start(vocab, eosTokenIds), trials: GrammarTrialPool.create(vocab, eosTokenIds, limits) };
}

interface Waiting {
  request: EngineRequest;
  removed: boolean;
  /** Drops the request's interest in its compile trial. */
  cancel: () => void;
}

export interface GrammarAdmissionHandlers {
  /** The grammar is ready: one constraint per completion (best_of ?? n). */
  admit(request: EngineRequest, constraints: SequenceConstraint[]): void;
  /** The grammar failed to compile (RequestValidationError) or the grammar worker failed. */
  reject(request: EngineRequest, err: unknown): void;
}

export class GrammarAdmission {
  /** Requests whose grammar is compiling, and whether each was aborted meanwhile. */
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly grammars: GrammarEngines | null,
    private readonly defaults: StructuredOutputsDefaults,
    private readonly limits: StructuredOutputsLimits,
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
    const so = request.params.structured_outputs!;
    const spec = resolveConstraint(so, this.defaults);
    checkGrammarBounds(so, spec, this.limits);
    const { client, trials } = this.grammars;
    const trial = trials.check(spec);
    const entry: Waiting = { request, removed: false, cancel: trial.cancel };
    this.waiting.set(request.requestId, entry);
    const count = request.params.best_of ?? request.params.n;
    // Waiting for the end of the reasoning: the constraints start disabled (the completion enables them).
    const compiled = trial.done.then(() => (entry.removed ? [] : client.compile(request.requestId, spec, count, !request.structuredOutputsAfter)));
    compiled.then(
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
    entry.cancel();
    return entry.request;
  }

  drainStats(): CompileStats | null {
    return this.grammars?.client.drainStats() ?? null;
  }
}
