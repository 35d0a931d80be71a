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
  const windows: AudioWindow[] = [];
  let start = 0;
  while (start < samples.length) {
    if (start + opts.maxSamples >= samples.length) {
      windows.push({ start, samples: samples.subarray(start) });
      break;
    }
    const limit = start + opts.maxSamples;
    const cut = quietestPoint(samples, Math.max(start + 1, limit - opts.searchSamples), limit, opts.energyBlock);
    windows.push({ start, samples: samples.subarray(start, cut) });
    start = cut;
  }
  return windows;
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
