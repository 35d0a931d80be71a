// The streaming pieces of the audio front end equal their whole-signal versions exactly: the
// resampler fed in uneven pieces gives resample()'s samples bit for bit, and the window splitter
// fed piece by piece cuts where splitAudio() cuts.

import { resample, StreamingResampler } from '../../../src/model/audio/resample';
import { splitAudio, splitOptionsFor, WindowSplitter } from '../../../src/serving/audio/split-audio';

/** A deterministic test signal: tones plus a pseudo-random hiss. */
function signal(length: number): Float32Array {
  let seed = 12345;
  return Float32Array.from({ length }, (_, i) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return 0.4 * Math.sin(i / 5) + 0.2 * Math.sin(i / 41) + 0.1 * (seed / 2 ** 31 - 0.5);
  });
}

/** Same samples, bit for bit (fast on long arrays). */
const bytesOf = (x: Float32Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);

/** Cuts `x` into pieces of the given sizes, repeated. */
function pieces(x: Float32Array, sizes: number[]): Float32Array[] {
  const out: Float32Array[] = [];
  for (let at = 0, k = 0; at < x.length; k++) {
    const size = sizes[k % sizes.length];
    out.push(x.subarray(at, at + size));
    at += size;
  }
  return out;
}

describe('StreamingResampler', () => {
  it.each([
    [48000, 16000],
    [44100, 16000],
    [8000, 16000],
    [22050, 16000],
  ])('%i Hz -> %i Hz in pieces equals resample() bit for bit', (inRate, outRate) => {
    const x = signal(Math.round(inRate * 0.2));
    const whole = resample(x, inRate, outRate);
    for (const sizes of [[3], [7, 300, 1], [4096], [x.length]]) {
      const resampler = new StreamingResampler(inRate, outRate);
      const parts = [...pieces(x, sizes).map((p) => resampler.push(p)), resampler.flush()];
      const joined = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
      parts.reduce((at, p) => (joined.set(p, at), at + p.length), 0);
      expect(bytesOf(joined).equals(bytesOf(whole))).toBe(true);
    }
  });

  it('passes samples through when the rates match', () => {
    const x = signal(100);
    const resampler = new StreamingResampler(16000, 16000);
    expect(resampler.push(x)).toBe(x);
    expect(resampler.flush().length).toBe(0);
  });
});

describe('WindowSplitter', () => {
  const rate = 100;
  const opts = splitOptionsFor(rate, 30);

  it.each([0.5, 30, 30.001, 75, 91.3])('cuts %f s of audio where splitAudio() does', (seconds) => {
    const x = signal(Math.round(seconds * rate));
    for (let i = 0; i < x.length; i += 791) x.fill(0, i, i + 15); // quiet stretches to cut at
    const expected = splitAudio(x, opts).map((w) => ({ start: w.start, bytes: bytesOf(w.samples) }));
    for (const sizes of [[100], [13, 499], [x.length]]) {
      const splitter = new WindowSplitter(opts);
      const windows = [...pieces(x, sizes).flatMap((p) => splitter.push(p)), ...splitter.finish()];
      expect(windows.map((w) => w.start)).toEqual(expected.map((w) => w.start));
      expect(windows.every((w, i) => bytesOf(w.samples).equals(expected[i].bytes))).toBe(true);
    }
  });
});
