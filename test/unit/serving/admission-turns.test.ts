// AdmissionTurns: requests arriving together start their work in turns of the event loop, in the
// order they came, and a lone request goes through without waiting.

import { setImmediate as nextTurn } from 'node:timers/promises';
import { AdmissionTurns } from '../../../src/serving/yield-budget';

/** Holds the thread for `ms`, as a request's synchronous work does. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('AdmissionTurns', () => {
  it('lets a lone request and the quick ones after it through at once', async () => {
    const turns = new AdmissionTurns();
    expect(turns.enter()).toBeUndefined();
    expect(turns.enter()).toBeUndefined();
    await nextTurn();
    await nextTurn();
    // The event loop has turned: a new run starts.
    expect(turns.enter()).toBeUndefined();
    expect(turns.queued).toBe(0);
  });

  it('past the turn budget, queues requests and releases one per event-loop turn, first come first served', async () => {
    const turns = new AdmissionTurns();
    expect(turns.enter()).toBeUndefined();
    busy(10);
    const released: number[] = [];
    const waits = [0, 1, 2, 3].map((i) => {
      const wait = turns.enter();
      expect(wait).toBeInstanceOf(Promise);
      return wait!.then(() => released.push(i));
    });
    // A request that comes while others wait queues behind them, even with the budget fresh.
    expect(turns.queued).toBe(4);
    const seen: number[][] = [];
    while (released.length < 4) {
      await nextTurn();
      seen.push([...released]);
    }
    await Promise.all(waits);
    expect(released).toEqual([0, 1, 2, 3]);
    // Never two in the same turn.
    for (let i = 1; i < seen.length; i++) expect(seen[i].length - seen[i - 1].length).toBeLessThanOrEqual(1);
    await nextTurn();
    await nextTurn();
    expect(turns.enter()).toBeUndefined();
  });
});
