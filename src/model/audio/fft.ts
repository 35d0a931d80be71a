// Complex FFT of any length (mixed radix, decimation in time), in float64.
// Whisper's STFT frames are n_fft = 400 samples = 4·4·5·5, which the power-of-two FFT libraries
// on npm (fft.js and friends) cannot take without zero-padding, and zero-padding would change
// the spectrum. Each stage splits the length by one factor p and combines p sub-transforms with a
// p-point DFT over the twiddled inputs; for the small factors used here (2..5) that costs
// n·Σp complex multiply-adds per transform.

export class MixedRadixFft {
  /** Stage radices, first split first; their product is n. */
  private readonly radices: number[];
  private readonly twiddleRe: Float64Array;
  private readonly twiddleIm: Float64Array;
  private readonly scratchRe: Float64Array;
  private readonly scratchIm: Float64Array;

  constructor(readonly n: number) {
    if (!Number.isInteger(n) || n < 1) throw new Error(`FFT length must be a positive integer, got ${n}`);
    this.radices = factorize(n);
    this.twiddleRe = new Float64Array(n);
    this.twiddleIm = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      const angle = (-2 * Math.PI * k) / n;
      this.twiddleRe[k] = Math.cos(angle);
      this.twiddleIm[k] = Math.sin(angle);
    }
    const maxRadix = Math.max(1, ...this.radices);
    this.scratchRe = new Float64Array(maxRadix);
    this.scratchIm = new Float64Array(maxRadix);
  }

  /** out = DFT(in): X[k] = Σ x[j]·e^(-2πi·jk/n). Inputs are not modified; outputs must not alias them. */
  transform(inRe: ArrayLike<number>, inIm: ArrayLike<number>, outRe: Float64Array, outIm: Float64Array): void {
    if (inRe.length < this.n || inIm.length < this.n || outRe.length < this.n || outIm.length < this.n) {
      throw new Error(`FFT of length ${this.n} got shorter arrays`);
    }
    this.work(inRe, inIm, outRe, outIm, 0, 0, 1, 0);
  }

  /** Transforms the inputs taken every `stride` samples from `inOffset` into out[outOffset .. outOffset + len). */
  private work(
    inRe: ArrayLike<number>,
    inIm: ArrayLike<number>,
    outRe: Float64Array,
    outIm: Float64Array,
    outOffset: number,
    inOffset: number,
    stride: number,
    stage: number,
  ): void {
    const p = this.radices[stage];
    const m = this.n / (stride * p); // length of each sub-transform
    if (m === 1) {
      for (let q = 0; q < p; q++) {
        outRe[outOffset + q] = inRe[inOffset + q * stride];
        outIm[outOffset + q] = inIm[inOffset + q * stride];
      }
    } else {
      for (let q = 0; q < p; q++) {
        this.work(inRe, inIm, outRe, outIm, outOffset + q * m, inOffset + q * stride, stride * p, stage + 1);
      }
    }
    this.combine(outRe, outIm, outOffset, stride, m, p);
  }

  /** Merges p transforms of length m (at out[offset + q·m]) into one of length p·m, in place. */
  private combine(re: Float64Array, im: Float64Array, offset: number, stride: number, m: number, p: number): void {
    const { twiddleRe, twiddleIm, scratchRe, scratchIm, n } = this;
    for (let u = 0; u < m; u++) {
      for (let q = 0; q < p; q++) {
        scratchRe[q] = re[offset + u + q * m];
        scratchIm[q] = im[offset + u + q * m];
      }
      for (let q1 = 0; q1 < p; q1++) {
        const k = u + q1 * m; // output index within this length-p·m transform
        const step = (stride * k) % n;
        let accRe = scratchRe[0];
        let accIm = scratchIm[0];
        let tw = 0;
        for (let q = 1; q < p; q++) {
          tw += step;
          if (tw >= n) tw -= n;
          const wr = twiddleRe[tw];
          const wi = twiddleIm[tw];
          accRe += scratchRe[q] * wr - scratchIm[q] * wi;
          accIm += scratchRe[q] * wi + scratchIm[q] * wr;
        }
        re[offset + k] = accRe;
        im[offset + k] = accIm;
      }
    }
  }
}

/** Radix 4 first (cheapest per point), then 2, 3, 5 and any remaining prime. */
function factorize(n: number): number[] {
  const radices: number[] = [];
  let rest = n;
  for (const p of [4, 2, 3, 5]) {
    while (rest % p === 0) {
      radices.push(p);
      rest /= p;
    }
  }
  for (let p = 7; rest > 1; p += 2) {
    while (rest % p === 0) {
      radices.push(p);
      rest /= p;
    }
    if (p * p > rest && rest > 1) {
      radices.push(rest);
      rest = 1;
    }
  }
  return radices.length > 0 ? radices : [1];
}
