// Slaney-style mel filter bank (the one librosa.filters.mel and transformers' mel_filter_bank
// build with norm="slaney", mel_scale="slaney", and the one Whisper's features are defined with):
// triangles equally spaced on the Slaney mel scale (linear below 1 kHz, logarithmic above),
// each scaled to unit area (2 / bandwidth in Hz).

const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = 15;
const LOG_STEP = Math.log(6.4) / 27;

export function hzToSlaneyMel(hz: number): number {
  return hz < MIN_LOG_HZ ? (3 * hz) / 200 : MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOG_STEP;
}

export function slaneyMelToHz(mel: number): number {
  return mel < MIN_LOG_MEL ? (200 * mel) / 3 : MIN_LOG_HZ * Math.exp(LOG_STEP * (mel - MIN_LOG_MEL));
}

export interface MelFilterOptions {
  /** FFT bins 0 .. n_fft/2. */
  numFrequencyBins: number;
  numMelFilters: number;
  samplingRate: number;
  minFrequency?: number;
  /** Default: the Nyquist frequency. */
  maxFrequency?: number;
}

/** Weights as [numMelFilters, numFrequencyBins], row-major (one row per mel band). */
export function slaneyMelFilters(opts: MelFilterOptions): Float64Array {
  const { numFrequencyBins: bins, numMelFilters: mels, samplingRate } = opts;
  const fMin = opts.minFrequency ?? 0;
  const fMax = opts.maxFrequency ?? samplingRate / 2;
  const melMin = hzToSlaneyMel(fMin);
  const melMax = hzToSlaneyMel(fMax);
  // mels + 2 band edges: band m rises from edge m to edge m+1 and falls to edge m+2.
  const edges = Array.from({ length: mels + 2 }, (_, i) => slaneyMelToHz(melMin + ((melMax - melMin) * i) / (mels + 1)));
  const nyquist = Math.floor(samplingRate / 2);
  const binHz = (k: number) => (bins === 1 ? 0 : (nyquist * k) / (bins - 1));
  const weights = new Float64Array(mels * bins);
  for (let m = 0; m < mels; m++) {
    const [lower, center, upper] = [edges[m], edges[m + 1], edges[m + 2]];
    const area = 2 / (upper - lower);
    for (let k = 0; k < bins; k++) {
      const f = binHz(k);
      const rising = (f - lower) / (center - lower);
      const falling = (upper - f) / (upper - center);
      weights[m * bins + k] = Math.max(0, Math.min(rising, falling)) * area;
    }
  }
  return weights;
}
