// The front end's signal processing pieces: FFT against a direct DFT, the resampler's passband,
// stopband and length, and vLLM's quiet-point splitting of long audio.

import { MixedRadixFft } from '../../../src/model/audio/fft';
import { resample } from '../../../src/model/audio/resample';
import { splitAudio, splitOptionsFor } from '../../../src/serving/audio/split-audio';

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) - 0.5;
}

describe('MixedRadixFft', () => {
  it.each([1, 2, 3, 5, 7, 12, 49, 100, 400, 512])('equals a direct DFT for n = %i', (n) => {
    const rand = seeded(n);
    const re = Array.from({ length: n }, rand);
    const im = Array.from({ length: n }, rand);
    const outRe = new Float64Array(n);
    const outIm = new Float64Array(n);
    new MixedRadixFft(n).transform(re, im, outRe, outIm);
    for (let k = 0; k < n; k++) {
      let r = 0;
      let i = 0;
      for (let j = 0; j < n; j++) {
        const angle = (-2 * Math.PI * ((j * k) % n)) / n;
        r += re[j] * Math.cos(angle) - im[j] * Math.sin(angle);
        i += re[j] * Math.sin(angle) + im[j] * Math.cos(angle);
      }
      expect(Math.abs(r - outRe[k])).toBeLessThan(1e-9);
      expect(Math.abs(i - outIm[k])).toBeLessThan(1e-9);
    }
  });
});

/** Amplitude of the `freq` component of `x` (least squares over the middle, edges skipped). */
function toneAmplitude(x: Float32Array, freq: number, rate: number): number {
  let s = 0;
  let c = 0;
  const from = 2000;
  const to = x.length - 2000;
  for (let i = from; i < to; i++) {
    s += x[i] * Math.sin((2 * Math.PI * freq * i) / rate);
    c += x[i] * Math.cos((2 * Math.PI * freq * i) / rate);
  }
  return (2 * Math.hypot(s, c)) / (to - from);
}

function rms(x: Float32Array): number {
  let sum = 0;
  for (let i = 2000; i < x.length - 2000; i++) sum += x[i] * x[i];
  return Math.sqrt(sum / (x.length - 4000));
}

const tone = (freq: number, rate: number, seconds: number) =>
  Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.sin((2 * Math.PI * freq * i) / rate));

describe('resample', () => {
  it.each([48000, 44100, 22050, 8000])('keeps the passband from %i Hz to 16 kHz and the length ceil(n·16000/rate)', (rate) => {
    const input = tone(1000, rate, 1);
    const out = resample(input, rate, 16000);
    expect(out.length).toBe(Math.ceil((input.length * 16000) / rate));
    expect(Math.abs(toneAmplitude(out, 1000, 16000) - 1)).toBeLessThan(1e-3);
  });

  it.each([48000, 44100, 22050])('removes tones above 8 kHz (no aliasing) going from %i Hz to 16 kHz', (rate) => {
    for (const freq of [8800, 10000, 10999].filter((f) => f < rate / 2)) {
      expect(rms(resample(tone(freq, rate, 1), rate, 16000))).toBeLessThan(1e-4); // -80 dB for a full-scale tone
    }
  });

  it('returns the input when the rates are equal', () => {
    const input = tone(440, 16000, 0.1);
    expect(resample(input, 16000, 16000)).toBe(input);
  });
});

describe('splitAudio (vLLM chunking)', () => {
  const rate = 16000;
  const opts = splitOptionsFor(rate, 30);

  it('keeps audio of one window whole', () => {
    const x = new Float32Array(30 * rate);
    const windows = splitAudio(x, opts);
    expect(windows.length).toBe(1);
    expect(windows[0].start).toBe(0);
    expect(windows[0].samples).toBe(x);
  });

  it('cuts 70 s at the quietest 0.1 s of the second before each 30 s limit, covering every sample once', () => {
    const x = Float32Array.from({ length: 70 * rate }, (_, i) => 0.5 * Math.sin(i / 3));
    const quiet = [29.35, 58.8]; // seconds: a silent stretch before the first limit and before start + 30 s of the second window
    for (const at of quiet) x.fill(0, Math.round(at * rate), Math.round((at + 0.2) * rate));
    const windows = splitAudio(x, opts);
    expect(windows.length).toBe(3);
    let next = 0;
    for (const w of windows) {
      expect(w.start).toBe(next);
      expect(w.samples.length).toBeLessThanOrEqual(30 * rate);
      next += w.samples.length;
    }
    expect(next).toBe(x.length);
    // The cut starts a fully silent 0.1 s block inside the silent stretch.
    for (const [i, at] of quiet.entries()) {
      const cut = windows[i + 1].start;
      expect(cut / rate).toBeGreaterThanOrEqual(at);
      expect(cut / rate).toBeLessThanOrEqual(at + 0.1);
      expect(cut % opts.energyBlock).toBe(windows[i].start % opts.energyBlock);
    }
  });
});
