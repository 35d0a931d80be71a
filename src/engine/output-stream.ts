// A single-consumer queue of one request's outputs, fed by core events and drained by
// the generate() async generator. Outputs get the request's prompt ids here: the core leaves
// them off the worker message (cloning the prompt for every output of every step cost the
// worker more than the rest of the output).
//
// The queue is bounded: when the consumer falls BACKLOG_HIGH outputs behind (a streaming client
// that stopped reading), `flow.pause()` asks the core to set the request aside; once it has
// caught up to BACKLOG_LOW, `flow.resume()` takes it back. A few outputs still arrive after the
// pause (the steps already under way), so the backlog stays within a few outputs of the mark.
//
// Taking from the queue takes everything queued, folded into one output (output-merge.ts, as
// vLLM's RequestOutputCollector): a consumer that fell behind writes one larger SSE frame instead
// of one frame per step, while the text, token ids, logprobs and usage it sees stay the same.
// Merging happens on take, not on push, so the backlog still counts steps for the pause above.
// It cuts the frames and the HTTP thread's CPU per token when that thread falls behind the steps
// (docs/perf/sse.md).

import { canMerge, mergeInto } from './output-merge';
import type { OutputKind, RequestOutput } from './types';

export const BACKLOG_HIGH = 16;
export const BACKLOG_LOW = 4;

export interface OutputFlow {
  pause(): void;
  resume(): void;
}

export class OutputStream {
  private readonly items: RequestOutput[] = [];
  private error: Error | null = null;
  private waiter: { resolve: (o: RequestOutput) => void; reject: (e: Error) => void } | null = null;
  private paused = false;

  constructor(
    private readonly promptTokenIds: number[],
    /** How the request's outputs carry text and tokens: says how queued ones fold into one. */
    private readonly kind: OutputKind,
    private readonly flow: OutputFlow | null = null,
  ) {}

  /** Outputs received and not yet taken by the consumer. */
  get backlog(): number {
    return this.items.length;
  }

  push(output: RequestOutput): void {
    output.promptTokenIds = this.promptTokenIds;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve(output);
      return;
    }
    this.items.push(output);
    if (!this.paused && !output.finished && this.items.length >= BACKLOG_HIGH && this.flow) {
      this.paused = true;
      this.flow.pause();
    }
  }

  fail(error: Error): void {
    this.error = error;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(error);
    }
  }

  next(): Promise<RequestOutput> {
    let item = this.items.shift();
    while (item && this.items.length > 0 && canMerge(item, this.items[0])) item = mergeInto(item, this.items.shift()!, this.kind);
    if (this.paused && this.items.length <= BACKLOG_LOW) {
      this.paused = false;
      this.flow?.resume();
    }
    if (item) return Promise.resolve(item);
    if (this.error) return Promise.reject(this.error);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }
}
