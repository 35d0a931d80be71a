// Epoch milliseconds with sub-millisecond precision. performance.now() alone has a
// per-thread origin; adding timeOrigin makes stamps from the HTTP thread and the engine
// worker comparable (arrival time is stamped on one, first token on the other).
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
