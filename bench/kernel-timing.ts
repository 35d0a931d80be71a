// Shared by the kernel benches (q8-gemm, bf16-gemm) and their tests: options, seeded inputs, per-call timing,
// the relative difference and the row that compares onnxruntime's linear with the addon's.

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

/** The value after `--name` on the command line, else `fallback`. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** Largest |out - ref| relative to ref's largest magnitude. */
export function maxRelDiff(out: ArrayLike<number>, ref: ArrayLike<number>): number {
  let diff = 0;
  let mag = 0;
  for (let i = 0; i < out.length; i++) {
    diff = Math.max(diff, Math.abs(out[i] - ref[i]));
    mag = Math.max(mag, Math.abs(ref[i]));
  }
  return diff / mag;
}

type Timing = { cpu: number; wall: number };

/** One line of a kernel bench: shape, rows, threads, then onnxruntime's and the addon's timing (us, cpu, G(FL)OP/s of `ops`), speed-up and relative difference. */
export function comparisonRow(k: number, n: number, m: number, threads: number, ortTiming: Timing, addon: Timing, ops: number, relDiff: number): string {
  const rate = (t: Timing) => (ops / t.wall / 1e3).toFixed(0).padStart(5);
  return (
    `${`${k}x${n}`.padEnd(11)} ${String(m).padStart(4)} ${threads}   | ${ortTiming.wall.toFixed(0).padStart(8)} (${ortTiming.cpu.toFixed(0).padStart(6)})` +
    ` ${rate(ortTiming)} | ${addon.wall.toFixed(0).padStart(7)} (${addon.cpu.toFixed(0).padStart(6)})` +
    ` ${rate(addon)} | ${(ortTiming.wall / addon.wall).toFixed(2).padStart(6)}x | ${relDiff.toExponential(1)}`
  );
}
