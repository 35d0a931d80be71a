// Long audio -> windows the model can take (vLLM's speech-to-text chunking): each cut falls at
// the quietest 0.1 s stretch (lowest RMS) of the last second before the window limit, so words
// are rarely cut in half. Audio that fits one window stays whole.

export interface AudioWindow {
  /** First sample of the window in the whole recording. */
  start: number;
  samples: Float32Array;
}

export interface SplitOptions {
  /** Longest window, in samples (30 s for Whisper). */
  maxSamples: number;
  /** The stretch before the limit searched for a cut, in samples (1 s). */
  searchSamples: number;
  /** Energy is measured over blocks of this many samples (0.1 s). */
  energyBlock: number;
}

export function splitOptionsFor(sampleRate: number, maxSeconds: number): SplitOptions {
  return { maxSamples: Math.round(maxSeconds * sampleRate), searchSamples: sampleRate, energyBlock: Math.round(sampleRate / 10) };
}

export function splitAudio(samples: Float32Array, opts: SplitOptions): AudioWindow[] {
  if (samples.length <= opts.maxSamples) return [{ start: 0, samples }];
  const splitter = new WindowSplitter(opts);
  return [...splitter.push(samples), ...splitter.finish()];
}

/**
 * splitAudio() fed piece by piece: push() returns the windows the samples so far settle, finish()
 * the last one. Holds at most one window plus one piece, so a long recording never sits whole in
 * memory; the windows are copies (the buffer is reused).
 */
export class WindowSplitter {
  private pending: Float32Array;
  private filled = 0;
  /** Index of pending[0] in the whole recording. */
  private offset = 0;

  constructor(private readonly opts: SplitOptions) {
    this.pending = new Float32Array(opts.maxSamples + 1);
  }

  push(samples: Float32Array): AudioWindow[] {
    if (this.filled + samples.length > this.pending.length) {
      const grown = new Float32Array(Math.max(this.filled + samples.length, this.opts.maxSamples + 1));
      grown.set(this.pending.subarray(0, this.filled));
      this.pending = grown;
    }
    this.pending.set(samples, this.filled);
    this.filled += samples.length;
    const windows: AudioWindow[] = [];
    const { maxSamples, searchSamples, energyBlock } = this.opts;
    // A cut is settled once more than a window's worth is buffered (the last window may be a full one).
    while (this.filled > maxSamples) {
      const cut = quietestPoint(this.pending, Math.max(1, maxSamples - searchSamples), maxSamples, energyBlock);
      windows.push({ start: this.offset, samples: this.pending.slice(0, cut) });
      this.pending.copyWithin(0, cut, this.filled);
      this.filled -= cut;
      this.offset += cut;
    }
    return windows;
  }

  finish(): AudioWindow[] {
    if (this.filled === 0) return [];
    const last = { start: this.offset, samples: this.pending.slice(0, this.filled) };
    this.filled = 0;
    return [last];
  }
}

/** Start of the lowest-RMS block of `block` samples in [from, to) (the first on ties); `to` when no block fits. */
function quietestPoint(samples: Float32Array, from: number, to: number, block: number): number {
  let best = to;
  let bestEnergy = Infinity;
  for (let at = from; at + block < to; at += block) {
    let energy = 0;
    for (let i = at; i < at + block; i++) energy += samples[i] * samples[i];
    if (energy < bestEnergy) {
      bestEnergy = energy;
      best = at;
    }
  }
  return best;
}
