// One uploaded file -> the model's input windows: decode, down-mix, resample to the feature
// extractor's rate, split at quiet points, log-mel features per window. Runs in the audio worker.

import type { AudioFeatureConfig } from '../../model/audio/feature-config';
import { LogMelExtractor } from '../../model/audio/log-mel';
import { decodeAudioStream } from './decode-audio';
import { splitOptionsFor, WindowSplitter, type AudioWindow } from './split-audio';

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

/** Rate-converted samples are gathered in blocks of this many (4 MB): no doubling copies. */
const BLOCK_SAMPLES = 1 << 20;

export async function decodeToModelRate(job: AudioJob): Promise<ModelRatePcm> {
  const rate = job.features.samplingRate;
  const blocks: Float32Array[] = [];
  let pieces: Float32Array[] = [];
  let pending = 0;
  const total = await decodeAudioStream(job.bytes, rate, job.maxSeconds, (samples) => {
    pieces.push(samples);
    pending += samples.length;
    if (pending < BLOCK_SAMPLES) return;
    blocks.push(join(pieces, pending));
    pieces = [];
    pending = 0;
  });
  blocks.push(join(pieces, pending));
  return { samples: join(blocks, total), durationSeconds: total / rate };
}

/** Windows are cut and featurized while decoding goes on: only the features are kept. */
export async function prepareAudio(job: AudioJob): Promise<PreparedAudio> {
  const { features: config } = job;
  const extractor = extractorFor(config);
  const splitter = new WindowSplitter(splitOptionsFor(config.samplingRate, config.chunkLengthSeconds));
  const windows: PreparedWindow[] = [];
  const featurize = (ready: AudioWindow[]) => {
    for (const w of ready) {
      windows.push({ startSeconds: w.start / config.samplingRate, durationSeconds: w.samples.length / config.samplingRate, features: extractor.extract(w.samples) });
    }
  };
  const total = await decodeAudioStream(job.bytes, config.samplingRate, job.maxSeconds, (samples) => featurize(splitter.push(samples)));
  featurize(splitter.finish());
  return { durationSeconds: total / config.samplingRate, windows };
}

function join(pieces: readonly Float32Array[], total: number): Float32Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Float32Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
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
