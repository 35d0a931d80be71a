// The clock of a request's timings (arrival, scheduling, tokens): milliseconds of the host's
// monotonic clock (libuv's hrtime), with sub-millisecond precision. It is one clock for every
// thread and process on the host, so an arrival stamped on the HTTP thread compares with a token
// stamped in the engine worker; and it never steps, where Date.now() follows NTP and VM clock
// corrections (a wall clock that jumped mid-request once gave a negative e2e latency).
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
