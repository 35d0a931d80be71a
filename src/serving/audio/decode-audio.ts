// Uploaded audio file -> mono PCM at the model's sample rate.
//
// Library: audio-decode (audiojs; the @audio/* and @wasm-audio-decoders/* WebAssembly decoders):
// wav, mp3, flac, ogg (vorbis, opus), m4a/mp4 (AAC), webm/mkv (opus), aac, aiff, caf, wma, amr
// and more, detected from the file's bytes by audio-type. Pure WebAssembly: a malformed file
// becomes an exception, never a native crash, and nothing needs a system ffmpeg. The packages
// are ES modules, loaded with import() (require(esm) on Node >= 20.19); decoding runs in the
// audio worker thread (audio-worker.ts) so the HTTP thread never waits on it.
//
// Decoding streams: a declared length over the limit is refused before decoding
// (declared-duration.ts); otherwise the file is fed to the streaming decoder in small pieces
// (a few KB of FLAC silence hold minutes of audio), each decoded piece is down-mixed and resampled
// to the model's rate at once and handed on, and decoding stops as soon as the audio exceeds
// `maxSeconds`. Memory is one piece of each, never the whole recording at the file's own rate.

import { Readable } from 'node:stream';
import { StreamingResampler } from '../../model/audio/resample';
import { declaredDurationSeconds } from './declared-duration';
import { flacChunks } from './flac-chunks';

/** A client error in the uploaded audio (answered with 400). */
export class AudioInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AudioInputError';
  }
}

/** Bytes handed to a decoder at a time. FLAC gets small pieces: a few KB of silence hold minutes. */
const FEED_BYTES = 64 * 1024;
const FLAC_FEED_BYTES = 2048;

interface DecodedPiece {
  channelData: Float32Array[];
  sampleRate: number;
}

/**
 * Decodes `bytes` to mono at `outRate`, passing the samples to `sink` piece by piece; returns how
 * many there were. AudioInputError for a bad file or audio longer than `maxSeconds`.
 */
export async function decodeAudioStream(bytes: Uint8Array, outRate: number, maxSeconds: number, sink: (samples: Float32Array) => void): Promise<number> {
  if (bytes.length === 0) throw new AudioInputError('The audio file is empty.');
  const [{ default: audioType }, { decodeChunked }] = await Promise.all([import('audio-type'), import('audio-decode')]);
  const format = audioType(bytes);
  if (!format) throw new AudioInputError('Invalid or unsupported audio file: the format was not recognised.');
  const declared = declaredDurationSeconds(bytes, format);
  if (declared !== null && declared > maxSeconds) throw tooLong(maxSeconds, declared);

  let resampler: StreamingResampler | null = null;
  let sampleRate = 0;
  let decoded = 0;
  let total = 0;
  const emit = (samples: Float32Array) => {
    total += samples.length;
    if (samples.length > 0) sink(samples);
  };
  try {
    for await (const piece of decodePieces(bytes, format, decodeChunked)) {
      const channels = piece.channelData;
      if (channels.length === 0 || channels[0].length === 0) continue;
      if (!resampler) {
        sampleRate = piece.sampleRate;
        resampler = new StreamingResampler(sampleRate, outRate);
      }
      if (piece.sampleRate !== sampleRate) throw new AudioInputError('The audio file changes its sample rate midway.');
      const mono = downmix(channels);
      decoded += mono.length;
      if (decoded > maxSeconds * sampleRate) throw tooLong(maxSeconds, null);
      emit(resampler.push(mono));
    }
  } catch (err) {
    if (err instanceof AudioInputError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new AudioInputError(`Invalid or unsupported audio file (${format}): ${reason}`);
  }
  if (!resampler || decoded === 0) throw new AudioInputError(`Invalid or unsupported audio file (${format}): no audio samples could be decoded.`);
  emit(resampler.flush());
  return total;
}

function tooLong(maxSeconds: number, declared: number | null): AudioInputError {
  const length = declared === null ? '' : `${Math.round(declared)} seconds long, `;
  return new AudioInputError(`The audio is ${length}longer than ${maxSeconds} seconds, the longest accepted.`);
}

function decodePieces(bytes: Uint8Array, format: string, decodeChunked: typeof import('audio-decode').decodeChunked): AsyncGenerator<DecodedPiece> {
  const chunks = format === 'flac' ? flacChunks(bytes, FLAC_FEED_BYTES) : feedChunks(bytes, FEED_BYTES);
  return decodeChunked(Readable.from(chunks), format as Parameters<typeof decodeChunked>[1]);
}

function* feedChunks(bytes: Uint8Array, size: number): Generator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** Mean of the channels; non-finite samples (a broken decoder's output) become silence. */
function downmix(channels: readonly Float32Array[]): Float32Array {
  const length = Math.min(...channels.map((c) => c.length));
  const out = new Float32Array(length);
  for (const channel of channels) for (let i = 0; i < length; i++) out[i] += channel[i];
  const scale = 1 / channels.length;
  for (let i = 0; i < length; i++) out[i] = Number.isFinite(out[i]) ? out[i] * scale : 0;
  return out;
}
