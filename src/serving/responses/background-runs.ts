// The background responses this process is running: an abort handle and the log of their stream
// events, so a client can follow a run (create with stream + background, or GET ?stream=true)
// and leave without stopping it. A finished run's log is kept a short while for late readers.

import type { ResponseStreamEvent } from './protocol';

/** How long a finished run's events stay readable. */
const KEEP_FINISHED_MS = 5 * 60_000;

export class BackgroundRun {
  readonly events: ResponseStreamEvent[] = [];
  readonly abort = new AbortController();
  private done = false;
  private readonly waiters = new Set<() => void>();

  get finished(): boolean {
    return this.done;
  }

  push(event: ResponseStreamEvent): void {
    this.events.push(event);
    this.notify();
  }

  finish(): void {
    this.done = true;
    this.notify();
  }

  private notify(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves on the next event, the run's end or the signal's abort; leaves no listener behind. */
  private nextChange(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        this.waiters.delete(wake);
        signal?.removeEventListener('abort', wake);
        resolve();
      };
      this.waiters.add(wake);
      signal?.addEventListener('abort', wake, { once: true });
    });
  }

  /** The events after sequence number `startingAfter` (all when null), then each new one until the run ends. */
  async *follow(startingAfter: number | null, signal?: AbortSignal): AsyncGenerator<ResponseStreamEvent> {
    let next = startingAfter === null ? 0 : startingAfter + 1;
    for (;;) {
      while (next < this.events.length) yield this.events[next++];
      if (this.done || signal?.aborted) return;
      await this.nextChange(signal);
    }
  }
}

export class BackgroundRuns {
  private readonly runs = new Map<string, BackgroundRun>();

  start(id: string): BackgroundRun {
    const run = new BackgroundRun();
    this.runs.set(id, run);
    return run;
  }

  get(id: string): BackgroundRun | undefined {
    return this.runs.get(id);
  }

  /** Marks the run finished; its log is dropped later. */
  finish(id: string, run: BackgroundRun): void {
    run.finish();
    setTimeout(() => {
      if (this.runs.get(id) === run) this.runs.delete(id);
    }, KEEP_FINISHED_MS).unref();
  }

  /** Aborts every run (server shutdown). */
  abortAll(): void {
    for (const run of this.runs.values()) run.abort.abort(new Error('server shutting down'));
  }
}
