// Pairs control operations sent to the core (worker or in-process) with their 'control-done'
// events, so CoreConnection.control() can be awaited.

import type { ControlOp, CoreEvent } from './protocol';

export class ControlCalls {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

  /** Sends `op` with a fresh call id through `send`; resolves when its 'control-done' arrives. */
  call(op: ControlOp, send: (callId: number, op: ControlOp) => void): Promise<void> {
    const callId = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(callId, { resolve, reject });
      send(callId, op);
    });
  }

  /** Consumes 'control-done' events (returns true); other events are left to the caller. */
  settle(event: CoreEvent): boolean {
    if (event.type !== 'control-done') return false;
    const waiter = this.pending.get(event.callId);
    this.pending.delete(event.callId);
    if (event.error === null) waiter?.resolve();
    else waiter?.reject(new Error(event.error));
    return true;
  }

  /** Fails every pending call (the core died or shut down). */
  failAll(reason: string): void {
    for (const waiter of this.pending.values()) waiter.reject(new Error(reason));
    this.pending.clear();
  }
}
