// Shared by the kernel benches (q8-gemm, bf16-gemm): seeded inputs and per-call timing.

/** `count` values uniform in [-scale/2, scale/2), from a seeded LCG (the same inputs every run). */
export function seededUniform(count: number, seed: number, scale = 1): Float32Array {
  const a = new Float32Array(count);
  let x = seed;
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    a[i] = (x / 2 ** 32 - 0.5) * scale;
  }
  return a;
}

/** Median CPU and wall microseconds per call of fn over about `ms` milliseconds (after a warm-up). */
export function timeCall(fn: () => void, ms: number): { cpu: number; wall: number } {
  for (let i = 0; i < 3; i++) fn();
  const samples: Array<{ cpu: number; wall: number }> = [];
  const end = performance.now() + ms;
  while (performance.now() < end || samples.length < 5) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    const wall = (performance.now() - t0) * 1000;
    const c = process.cpuUsage(c0);
    samples.push({ cpu: c.user + c.system, wall });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
  return { cpu: median(samples.map((s) => s.cpu)), wall: median(samples.map((s) => s.wall)) };
}
