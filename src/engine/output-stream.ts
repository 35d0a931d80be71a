// A single-consumer queue of one request's outputs, fed by core events and drained by
// the generate() async generator. Outputs get the request's prompt ids here: the core leaves
// them off the worker message (cloning the prompt for every output of every step cost the
// worker more than the rest of the output).

import type { RequestOutput } from './types';

export class OutputStream {
  private readonly items: RequestOutput[] = [];
  private error: Error | null = null;
  private waiter: { resolve: (o: RequestOutput) => void; reject: (e: Error) => void } | null = null;

  constructor(private readonly promptTokenIds: number[]) {}

  push(output: RequestOutput): void {
    output.promptTokenIds = this.promptTokenIds;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve(output);
    } else {
      this.items.push(output);
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
    const item = this.items.shift();
    if (item) return Promise.resolve(item);
    if (this.error) return Promise.reject(this.error);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }
}
