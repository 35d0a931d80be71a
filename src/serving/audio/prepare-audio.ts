// One uploaded file -> the model's input windows: decode, down-mix, resample to the feature
// extractor's rate, split at quiet points, log-mel features per window. Runs in the audio worker.

import type { AudioFeatureConfig } from '../../model/audio/feature-config';
import { LogMelExtractor } from '../../model/audio/log-mel';
import { resample } from '../../model/audio/resample';
import { decodeAudioFile } from './decode-audio';
import { splitAudio, splitOptionsFor } from './split-audio';

export interface AudioJob {
  /** 'windows': model input windows (PreparedAudio); 'pcm': the mono signal at the model's rate (ModelRatePcm). */
  kind: 'windows' | 'pcm';
  bytes: Uint8Array;
  features: AudioFeatureConfig;
  /** Longest audio accepted, in seconds. */
  maxSeconds: number;
}

export interface PreparedWindow {
  /** Offset of the window in the recording, in seconds. */
  startSeconds: number;
  durationSeconds: number;
  /** Log-mel features [numMelBins, frames]. */
  features: Float32Array;
}

export interface PreparedAudio {
  /** Length of the decoded recording, in seconds. */
  durationSeconds: number;
  windows: PreparedWindow[];
}

export interface ModelRatePcm {
  /** Mono samples at features.samplingRate. */
  samples: Float32Array;
  durationSeconds: number;
}

const extractors = new Map<string, LogMelExtractor>();

export async function decodeToModelRate(job: AudioJob): Promise<ModelRatePcm> {
  const decoded = await decodeAudioFile(job.bytes, job.maxSeconds);
  const samples = resample(decoded.samples, decoded.sampleRate, job.features.samplingRate);
  return { samples, durationSeconds: samples.length / job.features.samplingRate };
}

export async function prepareAudio(job: AudioJob): Promise<PreparedAudio> {
  const { features: config } = job;
  const { samples, durationSeconds } = await decodeToModelRate(job);
  const extractor = extractorFor(config);
  const windows = splitAudio(samples, splitOptionsFor(config.samplingRate, config.chunkLengthSeconds)).map((w) => ({
    startSeconds: w.start / config.samplingRate,
    durationSeconds: w.samples.length / config.samplingRate,
    features: extractor.extract(w.samples),
  }));
  return { durationSeconds, windows };
}

function extractorFor(config: AudioFeatureConfig): LogMelExtractor {
  const key = JSON.stringify(config);
  let extractor = extractors.get(key);
  if (!extractor) {
    extractor = new LogMelExtractor(config);
    extractors.set(key, extractor);
  }
  return extractor;
}
