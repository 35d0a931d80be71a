// Waiting for what a test is really waiting for (a metric, a log line, a closed port), never for
// a fixed time: a fixed sleep is too short on a busy machine and needlessly long on a fast one.

/** Polls `check` until it holds; fails after `timeoutMs` saying what never happened. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
