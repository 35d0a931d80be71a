// Seeded pseudo-random generators for sampling. Each sequence owns one, so a seeded
// request draws the same numbers whatever else shares its batch (vLLM keeps a
// torch.Generator per seeded request for the same reason). Unseeded sequences get a
// generator whose seed is drawn from one process-wide source, itself seeded, so a whole
// run is reproducible when the server is started with a fixed seed.

/** xoshiro128** (Blackman & Vigna): 128-bit state, 32-bit outputs, fast in JS int32 math. */
export class Rng {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(seed: number) {
    // Seeds may be any integer up to 2^64 (vLLM accepts 64-bit seeds): fold both halves in.
    const lo = Number(BigInt.asUintN(32, BigInt(Math.trunc(seed))));
    const hi = Number(BigInt.asUintN(32, BigInt(Math.trunc(seed)) >> 32n));
    let x = (lo ^ Math.imul(hi, 0x9e3779b9)) >>> 0;
    const next = (): number => {
      // splitmix32 expands the seed into a well-mixed, non-zero state.
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next() ^ hi;
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next unsigned 32-bit integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform double in [0, 1) with 53 random bits. */
  nextDouble(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

let globalSource = new Rng(0);

/** Re-seeds the process-wide source used for requests without a seed (it starts from 0, vLLM's default seed). */
export function seedGlobalSampler(seed: number): void {
  globalSource = new Rng(seed);
}

/** A generator for one sequence: seeded when `seed` is given, else drawn from the global source. */
export function createSequenceRng(seed: number | null | undefined): Rng {
  if (seed != null) return new Rng(seed);
  return new Rng(globalSource.nextUint32() * 4294967296 + globalSource.nextUint32());
}

/**
 * Seed of the i-th of n parallel samples of one request. vLLM gives child i of a seeded
 * parent `seed + i` so the n completions differ yet stay reproducible.
 */
export function childSeed(seed: number | null, index: number): number | null {
  return seed == null ? null : seed + index;
}
