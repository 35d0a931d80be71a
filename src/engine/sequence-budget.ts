// The --max-num-queued-reqs bound on sequences in flight (waiting + running, n or best_of each).
// A request of many prompts takes room for all its sequences at once (reserve) before any of them
// reaches the engine, so concurrent requests are admitted whole or refused whole: a burst admits
// the requests that fit instead of interleaving their prompts until every one of them overflows.

import { EngineOverloadedError, RequestValidationError } from './errors';
import type { SequenceReservation } from './types';

/** What an overloaded server tells clients to wait before retrying, in seconds. */
const OVERLOADED_RETRY_AFTER_SECONDS = 1;

class HeldSequences implements SequenceReservation {
  /** Of `sequences`, those taken by engine requests now running under this reservation. */
  inUse = 0;
  released = false;

  constructor(
    readonly sequences: number,
    private readonly giveBack: (sequences: number) => void,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.giveBack(this.sequences);
  }
}

export class SequenceBudget {
  private queued = 0;

  constructor(
    /** null = no bound (sequences are still counted). */
    private readonly max: number | null,
  ) {}

  /** Sequences admitted and not yet given back. */
  get queuedSequences(): number {
    return this.queued;
  }

  /**
   * Throws unless `sequences` more fit now: RequestValidationError (400) when they alone exceed
   * the bound, so retrying cannot help; EngineOverloadedError (503, Retry-After) when the
   * sequences already in flight leave no room for them.
   */
  check(sequences: number, param: string | null = null): void {
    const max = this.max;
    if (max === null) return;
    if (sequences > max) {
      throw new RequestValidationError(
        `This request needs ${sequences} sequences, more than the server holds at once (--max-num-queued-reqs ${max}); send it in smaller parts.`,
        param,
      );
    }
    if (this.queued + sequences > max) {
      throw new EngineOverloadedError(
        `The server is overloaded: ${this.queued} sequences are queued or running (--max-num-queued-reqs ${max}). Retry later.`,
        OVERLOADED_RETRY_AFTER_SECONDS,
      );
    }
  }

  /** Takes room for `sequences` at once (all or none, throwing as check does) until released. */
  reserve(sequences: number, param: string | null = null): SequenceReservation {
    this.check(sequences, param);
    this.queued += sequences;
    return new HeldSequences(sequences, (n) => (this.queued -= n));
  }

  /**
   * Room for one engine request of `sequences`: from `reservation` while it has them unused,
   * else from the bound (checked). Returns what gives them back, once, when the request ends.
   */
  take(sequences: number, reservation?: SequenceReservation): () => void {
    if (reservation instanceof HeldSequences && !reservation.released && reservation.inUse + sequences <= reservation.sequences) {
      reservation.inUse += sequences;
      return once(() => (reservation.inUse -= sequences));
    }
    this.check(sequences);
    this.queued += sequences;
    return once(() => (this.queued -= sequences));
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
