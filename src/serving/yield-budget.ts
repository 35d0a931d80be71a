// The HTTP thread's time budget: one FIFO of turns for all its work. A request that arrives,
// a finished request about to build its answer and a long loop (thousands of choices' logprobs,
// a large JSON answer written in pieces) each await takeTurn() before a piece of work; while the
// current run of work is under TURN_MS they go on at once, past it they wait for the next turn
// of the event loop. So a burst of a thousand requests, or a batch of hundreds finishing in the
// same engine step, holds the thread a few milliseconds at a time, and /health goes on meanwhile.

const TURN_MS = 4;

/**
 * A FIFO gate in front of each piece of work. Requests go through at once while the current run
 * of admissions (no event-loop turn between them) is younger than TURN_MS; past that they wait,
 * and after each turn of the event loop one more goes through. A request's own work then runs
 * (as microtasks) before the loop polls again, so what one turn holds the thread is about one
 * request's preparation, however many arrived in the same poll.
 */
export class AdmissionTurns {
  private readonly waiting: Array<() => void> = [];
  /** When the current run of admissions began; null once the event loop has turned since. */
  private runStart: number | null = null;
  private scheduled = false;

  enter(): Promise<void> | undefined {
    if (this.waiting.length === 0) {
      const now = performance.now();
      if (this.runStart === null) {
        this.runStart = now;
        this.schedule();
        return undefined;
      }
      if (now - this.runStart < TURN_MS) return undefined;
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  /** How many requests wait for their turn. */
  get queued(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.turn());
  }

  /** Runs once per event-loop turn while anything is admitted or waiting. */
  private turn(): void {
    this.scheduled = false;
    const next = this.waiting.shift();
    if (next === undefined) {
      this.runStart = null;
      return;
    }
    this.runStart = performance.now();
    next();
    this.schedule();
  }
}

const turns = new AdmissionTurns();

/** Await (when it returns a promise) before a piece of work on the HTTP thread: see AdmissionTurns. */
export function takeTurn(): Promise<void> | undefined {
  return turns.enter();
}

/** Items a long loop handles between two takeTurn() checks: well under a millisecond of work. */
const ITEMS_PER_CHECK = 256;

/** `fn` over every item on the HTTP thread, taking turns (see takeTurn) every few hundred items. */
export async function forEachTakingTurns<T>(items: readonly T[], fn: (item: T, index: number) => void): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    if (i % ITEMS_PER_CHECK === 0) await takeTurn();
    fn(items[i], i);
  }
}

/** items.map(fn), taking turns as forEachTakingTurns does. */
export async function mapTakingTurns<T, R>(items: readonly T[], fn: (item: T, index: number) => R): Promise<R[]> {
  const out = new Array<R>(items.length);
  await forEachTakingTurns(items, (item, i) => (out[i] = fn(item, i)));
  return out;
}
