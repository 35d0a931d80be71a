// Uploaded audio file -> mono PCM at the file's own sample rate.
//
// Library: audio-decode (audiojs; the @audio/* and @wasm-audio-decoders/* WebAssembly decoders):
// wav, mp3, flac, ogg (vorbis, opus), m4a/mp4 (AAC), webm/mkv (opus), aac, aiff, caf, wma, amr
// and more, detected from the file's bytes by audio-type. Pure WebAssembly: a malformed file
// becomes an exception, never a native crash, and nothing needs a system ffmpeg. The packages
// are ES modules, loaded with import() (require(esm) on Node >= 20.19); decoding runs in the
// audio worker thread (audio-worker.ts) so the HTTP thread never waits on it.
//
// Decoding is chunked: the file is fed to the streaming decoder piece by piece, each decoded piece
// is down-mixed at once, and decoding stops as soon as the audio exceeds `maxSeconds` (a 25 MB
// file of low-bitrate opus would otherwise expand to gigabytes of float samples).

import { Readable } from 'node:stream';

/** A client error in the uploaded audio (answered with 400). */
export class AudioInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AudioInputError';
  }
}

export interface DecodedAudio {
  /** Mono samples (the mean of the channels). */
  samples: Float32Array;
  sampleRate: number;
}

/** Bytes handed to the streaming decoder at a time. */
const FEED_BYTES = 64 * 1024;

export async function decodeAudioFile(bytes: Uint8Array, maxSeconds: number): Promise<DecodedAudio> {
  if (bytes.length === 0) throw new AudioInputError('The audio file is empty.');
  const [{ default: audioType }, { decodeChunked }] = await Promise.all([import('audio-type'), import('audio-decode')]);
  const format = audioType(bytes);
  if (!format) throw new AudioInputError('Invalid or unsupported audio file: the format was not recognised.');

  const pieces: Float32Array[] = [];
  let total = 0;
  let sampleRate = 0;
  try {
    for await (const decoded of decodeChunked(Readable.from(feedChunks(bytes)), format as Parameters<typeof decodeChunked>[1])) {
      const channels = decoded.channelData;
      if (channels.length === 0 || channels[0].length === 0) continue;
      if (sampleRate === 0) sampleRate = decoded.sampleRate;
      if (decoded.sampleRate !== sampleRate) throw new AudioInputError('The audio file changes its sample rate midway.');
      const mono = downmix(channels);
      pieces.push(mono);
      total += mono.length;
      if (total > maxSeconds * sampleRate) throw new AudioInputError(`The audio is longer than ${maxSeconds} seconds.`);
    }
  } catch (err) {
    if (err instanceof AudioInputError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new AudioInputError(`Invalid or unsupported audio file (${format}): ${reason}`);
  }
  if (total === 0 || !(sampleRate > 0)) throw new AudioInputError(`Invalid or unsupported audio file (${format}): no audio samples could be decoded.`);
  return { samples: concat(pieces, total), sampleRate };
}

function feedChunks(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += FEED_BYTES) out.push(bytes.subarray(at, at + FEED_BYTES));
  return out;
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

function concat(pieces: readonly Float32Array[], total: number): Float32Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Float32Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}
