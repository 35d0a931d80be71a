// Whisper's log-mel spectrogram of one window (transformers' WhisperFeatureExtractor, numpy path):
// zero-pad the 16 kHz mono signal to the window length, STFT with a periodic Hann window of
// n_fft samples every hop samples (centered: reflect-padded by n_fft/2 at both ends), power
// spectrum, Slaney mel filters, log10 with a 1e-10 floor, drop the last frame, clamp to 8 below
// the window's maximum, then (x + 4) / 4. Computed in float64, returned as float32
// [numMelBins, frames] (mel-major, the encoder's input layout).

import { AudioFeatureConfig, windowFrames, windowSamples } from './feature-config';
import { MixedRadixFft } from './fft';
import { slaneyMelFilters } from './mel-filters';

const LOG_FLOOR = 1e-10;
const DYNAMIC_RANGE = 8;

export class LogMelExtractor {
  readonly numSamples: number;
  readonly numFrames: number;
  private readonly fft: MixedRadixFft;
  private readonly window: Float64Array;
  private readonly filters: Float64Array;
  /** Per mel band, the bins its triangle covers ([first, end)): the rest of its row is zero. */
  private readonly bands: Array<[number, number]>;
  private readonly numBins: number;

  constructor(readonly config: AudioFeatureConfig) {
    this.numSamples = windowSamples(config);
    this.numFrames = windowFrames(config);
    this.fft = new MixedRadixFft(config.nFft);
    this.numBins = Math.floor(config.nFft / 2) + 1;
    // Periodic Hann (the DFT-even window torch.hann_window and transformers use).
    this.window = Float64Array.from({ length: config.nFft }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / config.nFft));
    this.filters = slaneyMelFilters({ numFrequencyBins: this.numBins, numMelFilters: config.numMelBins, samplingRate: config.samplingRate });
    this.bands = Array.from({ length: config.numMelBins }, (_, m) => {
      const row = this.filters.subarray(m * this.numBins, (m + 1) * this.numBins);
      const first = row.findIndex((w) => w !== 0);
      let end = row.length;
      while (end > 0 && row[end - 1] === 0) end--;
      return first < 0 ? [0, 0] : [first, end];
    });
  }

  /** Features of `pcm` (mono, config.samplingRate; at most one window long). */
  extract(pcm: Float32Array): Float32Array {
    if (pcm.length > this.numSamples) throw new Error(`a window holds at most ${this.numSamples} samples, got ${pcm.length}`);
    const power = this.powerSpectrogram(pcm);
    const { numMelBins: mels } = this.config;
    const frames = this.numFrames;
    const bins = this.numBins;
    const logMel = new Float64Array(mels * frames);
    let max = -Infinity;
    for (let m = 0; m < mels; m++) {
      const row = m * bins;
      const [first, end] = this.bands[m];
      for (let t = 0; t < frames; t++) {
        let sum = 0;
        const col = t * bins;
        for (let k = first; k < end; k++) sum += this.filters[row + k] * power[col + k];
        const value = Math.log10(Math.max(sum, LOG_FLOOR));
        logMel[m * frames + t] = value;
        if (value > max) max = value;
      }
    }
    const out = new Float32Array(mels * frames);
    const floor = max - DYNAMIC_RANGE;
    for (let i = 0; i < out.length; i++) out[i] = (Math.max(logMel[i], floor) + 4) / 4;
    return out;
  }

  /** |STFT|² of the zero-padded window, [frames, bins] (the last STFT frame is not computed: it is dropped). */
  private powerSpectrogram(pcm: Float32Array): Float64Array {
    const { nFft, hopLength } = this.config;
    const half = Math.floor(nFft / 2);
    const padded = new Float64Array(this.numSamples + 2 * half);
    padded.set(pcm, half);
    // Reflect padding (numpy 'reflect': the edge sample is not repeated) of the zero-padded signal.
    for (let i = 1; i <= half; i++) {
      padded[half - i] = padded[half + i];
      padded[half + this.numSamples - 1 + i] = padded[half + this.numSamples - 1 - i];
    }
    const frames = this.numFrames;
    const bins = this.numBins;
    const power = new Float64Array(frames * bins);
    const re = new Float64Array(nFft);
    const im = new Float64Array(nFft);
    const outRe = new Float64Array(nFft);
    const outIm = new Float64Array(nFft);
    // Two real frames per complex FFT: z = a + i·b, then A[k] = (Z[k] + conj Z[n-k]) / 2 and
    // B[k] = (Z[k] - conj Z[n-k]) / 2i.
    for (let t = 0; t < frames; t += 2) {
      const second = t + 1 < frames;
      for (let i = 0; i < nFft; i++) {
        re[i] = padded[t * hopLength + i] * this.window[i];
        im[i] = second ? padded[(t + 1) * hopLength + i] * this.window[i] : 0;
      }
      this.fft.transform(re, im, outRe, outIm);
      for (let k = 0; k < bins; k++) {
        const j = k === 0 ? 0 : nFft - k;
        const aRe = (outRe[k] + outRe[j]) / 2;
        const aIm = (outIm[k] - outIm[j]) / 2;
        power[t * bins + k] = aRe * aRe + aIm * aIm;
        if (second) {
          const bRe = (outIm[k] + outIm[j]) / 2;
          const bIm = (outRe[j] - outRe[k]) / 2;
          power[(t + 1) * bins + k] = bRe * bRe + bIm * bIm;
        }
      }
    }
    return power;
  }
}
