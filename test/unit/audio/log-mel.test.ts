// Whisper's log-mel front end against an independent implementation written here: a direct DFT
// (no FFT) per frame, librosa's ramp form of the Slaney filter bank, reflect padding by index
// mapping. Signals: a sine sweep, and real speech from espeak-ng resampled to 16 kHz by sox.

import { join } from 'node:path';
import { WHISPER_FEATURES, type AudioFeatureConfig } from '../../../src/model/audio/feature-config';
import { LogMelExtractor } from '../../../src/model/audio/log-mel';
import { SPEECH_TOOLS, readWav, soxToWav, speak, tempDir } from '../../helpers/speech';
import { needs } from '../../helpers/needs';

/** librosa.filters.mel(sr, n_fft, n_mels) with htk=False, norm='slaney', in its ramp formulation. */
function librosaMel(sr: number, nFft: number, nMels: number): number[][] {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  const toMel = (f: number) => (f >= minLogHz ? minLogMel + Math.log(f / minLogHz) / logStep : f / fSp);
  const toHz = (m: number) => (m >= minLogMel ? minLogHz * Math.exp(logStep * (m - minLogMel)) : fSp * m);
  const fftFreqs = Array.from({ length: nFft / 2 + 1 }, (_, k) => (k * sr) / nFft);
  const melMax = toMel(sr / 2);
  const melF = Array.from({ length: nMels + 2 }, (_, i) => toHz((melMax * i) / (nMels + 1)));
  const weights: number[][] = [];
  for (let i = 0; i < nMels; i++) {
    const row = fftFreqs.map((f) => {
      const lower = -(melF[i] - f) / (melF[i + 1] - melF[i]);
      const upper = (melF[i + 2] - f) / (melF[i + 2] - melF[i + 1]);
      return Math.max(0, Math.min(lower, upper));
    });
    const enorm = 2 / (melF[i + 2] - melF[i]);
    weights.push(row.map((w) => w * enorm));
  }
  return weights;
}

function referenceLogMel(pcm: Float32Array, c: AudioFeatureConfig): Float64Array {
  const n = c.chunkLengthSeconds * c.samplingRate;
  const signal = new Float64Array(n);
  signal.set(pcm.subarray(0, n));
  const pad = c.nFft / 2;
  const at = (i: number) => signal[i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i];
  const frames = Math.floor(n / c.hopLength);
  const bins = c.nFft / 2 + 1;
  const cos: Float64Array[] = [];
  const sin: Float64Array[] = [];
  for (let k = 0; k < bins; k++) {
    cos.push(Float64Array.from({ length: c.nFft }, (_, j) => Math.cos((2 * Math.PI * k * j) / c.nFft)));
    sin.push(Float64Array.from({ length: c.nFft }, (_, j) => Math.sin((2 * Math.PI * k * j) / c.nFft)));
  }
  const hann = Array.from({ length: c.nFft }, (_, j) => Math.sin((Math.PI * j) / c.nFft) ** 2);
  const mel = librosaMel(c.samplingRate, c.nFft, c.numMelBins);
  const out = new Float64Array(c.numMelBins * frames);
  const frame = new Float64Array(c.nFft);
  const power = new Float64Array(bins);
  for (let t = 0; t < frames; t++) {
    let silent = true;
    for (let j = 0; j < c.nFft; j++) {
      frame[j] = at(t * c.hopLength + j - pad) * hann[j];
      if (frame[j] !== 0) silent = false;
    }
    for (let k = 0; k < bins; k++) {
      if (silent) {
        power[k] = 0;
        continue;
      }
      let re = 0;
      let im = 0;
      for (let j = 0; j < c.nFft; j++) {
        re += frame[j] * cos[k][j];
        im -= frame[j] * sin[k][j];
      }
      power[k] = re * re + im * im;
    }
    for (let m = 0; m < c.numMelBins; m++) {
      let sum = 0;
      for (let k = 0; k < bins; k++) sum += mel[m][k] * power[k];
      out[m * frames + t] = Math.log10(Math.max(sum, 1e-10));
    }
  }
  const max = out.reduce((a, b) => Math.max(a, b), -Infinity);
  return out.map((v) => (Math.max(v, max - 8) + 4) / 4);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/** Exponential sweep from f0 to f1 Hz over `seconds`. */
function sineSweep(f0: number, f1: number, seconds: number, rate: number): Float32Array {
  const n = Math.round(seconds * rate);
  const k = Math.log(f1 / f0) / seconds;
  return Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin(((2 * Math.PI * f0) / k) * (Math.exp((k * i) / rate) - 1)));
}

describe('Whisper log-mel features', () => {
  it('has the shape the encoder takes: [80, 3000] for 30 s windows', () => {
    const extractor = new LogMelExtractor(WHISPER_FEATURES);
    expect(extractor.numFrames).toBe(3000);
    expect(extractor.extract(new Float32Array(16000)).length).toBe(80 * 3000);
  });

  it('equals the reference on a sine sweep (80 mel bins)', () => {
    const sweep = sineSweep(60, 7800, 6, 16000);
    const ours = new LogMelExtractor(WHISPER_FEATURES).extract(sweep);
    expect(maxAbsDiff(ours, referenceLogMel(sweep, WHISPER_FEATURES))).toBeLessThan(1e-4);
  });

  it('equals the reference with 128 mel bins and a window filled to the end (reflect padding of real samples)', () => {
    const config = { ...WHISPER_FEATURES, numMelBins: 128, chunkLengthSeconds: 2 };
    const sweep = sineSweep(200, 6000, 2, 16000);
    const ours = new LogMelExtractor(config).extract(sweep);
    expect(ours.length).toBe(128 * 200);
    expect(maxAbsDiff(ours, referenceLogMel(sweep, config))).toBeLessThan(1e-4);
  });

  it('refuses more samples than one window holds', () => {
    expect(() => new LogMelExtractor(WHISPER_FEATURES).extract(new Float32Array(480001))).toThrow(/at most 480000/);
  });
});

const withSpeechTools = needs(...SPEECH_TOOLS);

withSpeechTools.describe('Whisper log-mel features of espeak-ng speech', () => {
  it('equal the reference on real speech resampled to 16 kHz by sox', () => {
    const dir = tempDir('ortllm-logmel-');
    try {
      const wav = speak('Speech recognition runs on the same engine as text generation.', join(dir.path, 'speech.wav'));
      const { samples, sampleRate } = readWav(soxToWav(wav, join(dir.path, 'speech16k.wav'), 16000));
      expect(sampleRate).toBe(16000);
      expect(samples.length).toBeGreaterThan(16000);
      const ours = new LogMelExtractor(WHISPER_FEATURES).extract(samples);
      const reference = referenceLogMel(samples, WHISPER_FEATURES);
      expect(maxAbsDiff(ours, reference)).toBeLessThan(1e-4);
      // Speech is not silence: the features span the clamped 8-decade range.
      const range = ours.reduce((r, v) => [Math.min(r[0], v), Math.max(r[1], v)], [Infinity, -Infinity]);
      expect(range[1] - range[0]).toBeGreaterThan(1.5);
    } finally {
      dir.remove();
    }
  });
});
