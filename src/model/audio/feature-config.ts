// The audio feature extractor's settings (transformers' WhisperFeatureExtractor, as written to
// preprocessor_config.json): mel bands, FFT size, hop, sampling rate and window length.

export interface AudioFeatureConfig {
  /** Mel bands (80; 128 for large-v3 / turbo). */
  numMelBins: number;
  samplingRate: number;
  nFft: number;
  hopLength: number;
  /** Seconds per model window (30): shorter audio is zero-padded, longer is split. */
  chunkLengthSeconds: number;
}

export const WHISPER_FEATURES: AudioFeatureConfig = {
  numMelBins: 80,
  samplingRate: 16000,
  nFft: 400,
  hopLength: 160,
  chunkLengthSeconds: 30,
};

/** Samples in one model window (480000 for Whisper). */
export function windowSamples(c: AudioFeatureConfig): number {
  return c.chunkLengthSeconds * c.samplingRate;
}

/** Feature frames of one window (3000 for Whisper): the STFT's frames minus the last one. */
export function windowFrames(c: AudioFeatureConfig): number {
  return Math.floor(windowSamples(c) / c.hopLength);
}

/** Reads preprocessor_config.json's fields; `numMelBinsFallback` comes from config.json's num_mel_bins. */
export function audioFeatureConfigFromJson(json: Record<string, unknown> | null, numMelBinsFallback: number, source: string): AudioFeatureConfig {
  const pick = (key: string, fallback: number): number => {
    const value = json?.[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'number' || !(value > 0)) throw new Error(`${source}: preprocessor_config.json ${key} must be a positive number, got ${JSON.stringify(value)}`);
    return value;
  };
  const config: AudioFeatureConfig = {
    numMelBins: pick('feature_size', numMelBinsFallback),
    samplingRate: pick('sampling_rate', WHISPER_FEATURES.samplingRate),
    nFft: pick('n_fft', WHISPER_FEATURES.nFft),
    hopLength: pick('hop_length', WHISPER_FEATURES.hopLength),
    chunkLengthSeconds: pick('chunk_length', WHISPER_FEATURES.chunkLengthSeconds),
  };
  if (config.numMelBins !== numMelBinsFallback) {
    throw new Error(`${source}: preprocessor_config.json feature_size ${config.numMelBins} differs from config.json num_mel_bins ${numMelBinsFallback}`);
  }
  return config;
}
