// Long synchronous loops on the HTTP thread (formatting thousands of choices' logprobs for one
// response) give the event loop a turn every few milliseconds, so other requests and /health go on.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

const TURN_MS = 4;

/** Returns a function to await between items of a long loop: it yields once TURN_MS have passed. */
export function turnTaker(): () => Promise<void> {
  let turnStart = performance.now();
  return async () => {
    if (performance.now() - turnStart < TURN_MS) return;
    await yieldToEventLoop();
    turnStart = performance.now();
  };
}
