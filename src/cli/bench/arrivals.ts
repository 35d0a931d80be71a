// Request arrival times of `bench serve`, as vLLM draws them: gamma-distributed gaps with shape
// = burstiness (1 = Poisson) and mean 1/rate, rescaled so the last request is sent at N/rate.
// Seeded, so two runs send the same schedule.

import { Rng } from '../../engine/sampling/rng';

function normal(rng: Rng): number {
  // Box-Muller.
  const u = 1 - rng.nextDouble();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.nextDouble());
}

/** Gamma(shape, scale) by Marsaglia and Tsang (shape < 1 boosted by U^(1/shape)). */
export function gamma(rng: Rng, shape: number, scale: number): number {
  if (shape < 1) return gamma(rng, shape + 1, scale) * Math.pow(1 - rng.nextDouble(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rng.nextDouble();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v * scale;
  }
}

/** Seconds after the start at which each of `n` requests is sent. */
export function arrivalOffsets(n: number, rate: number, burstiness: number, seed: number): number[] {
  if (!Number.isFinite(rate)) return new Array<number>(n).fill(0);
  const rng = new Rng(seed);
  const offsets: number[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += gamma(rng, burstiness, 1 / (rate * burstiness));
    offsets.push(t);
  }
  const scale = offsets.length > 0 && offsets[n - 1] > 0 ? n / rate / offsets[n - 1] : 1;
  return offsets.map((o) => o * scale);
}
