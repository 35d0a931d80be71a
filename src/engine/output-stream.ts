// A single-consumer queue of one request's outputs, fed by core events and drained by
// the generate() async generator.

import type { RequestOutput } from './types';

export class OutputStream {
  private readonly items: RequestOutput[] = [];
  private error: Error | null = null;
  private waiter: { resolve: (o: RequestOutput) => void; reject: (e: Error) => void } | null = null;

  push(output: RequestOutput): void {
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
