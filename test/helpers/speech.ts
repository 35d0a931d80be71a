// Real speech for audio tests: synthesised by Debian's espeak-ng, converted with sox and encoded
// with ffmpeg (.ci/run installs them when missing). Tests gate on them with needs(...SPEECH_TOOLS).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** The tool's path on PATH, or where Debian installs it (absent: needs() reports it missing). */
function toolPath(name: string): string {
  const found = (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, name)).find((path) => existsSync(path));
  return found ?? `/usr/bin/${name}`;
}

/** espeak-ng, sox and ffmpeg: `needs(...SPEECH_TOOLS)`. */
export const SPEECH_TOOLS = ['espeak-ng', 'sox', 'ffmpeg'].map(toolPath);

export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** espeak-ng's voice to a WAV file (22050 Hz mono 16-bit). */
export function speak(text: string, path: string, voice = 'en'): string {
  execFileSync('espeak-ng', ['-v', voice, '-w', path, text]);
  return path;
}

/** sox: any audio file -> mono 16-bit WAV at `rate` (its own band-limited resampler). */
export function soxToWav(input: string, output: string, rate: number, extra: string[] = []): string {
  execFileSync('sox', [input, '-r', String(rate), '-c', '1', '-b', '16', output, ...extra]);
  return output;
}

/** Encoder settings per container/codec. */
export const FFMPEG_FORMATS = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k'],
  flac: ['-c:a', 'flac'],
  ogg: ['-c:a', 'libvorbis', '-q:a', '4'],
  opus: ['-c:a', 'libopus', '-b:a', '96k'],
  m4a: ['-c:a', 'aac', '-b:a', '96k'],
  webm: ['-c:a', 'libopus', '-b:a', '96k'],
} as const;

/** ffmpeg: encode `input` into `<dir>/<name>.<format>`; extra args go before the output. */
export function ffmpegEncode(input: string, dir: string, name: string, format: keyof typeof FFMPEG_FORMATS, extra: string[] = []): string {
  const output = join(dir, `${name}.${format}`);
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', input, ...extra, ...FFMPEG_FORMATS[format], output]);
  return output;
}

/** Samples of a PCM WAV file (16-bit integer or 32-bit float), channels averaged, read by walking its RIFF chunks. */
export function readWav(path: string): { samples: Float32Array; sampleRate: number } {
  const bytes = readFileSync(path);
  if (bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE') throw new Error(`${path} is not a WAV file`);
  let format = 0;
  let channels = 0;
  let sampleRate = 0;
  let bits = 0;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString('latin1', at, at + 4);
    // A writer that streamed its output may leave a too-large size: clamp to the file.
    const size = Math.min(bytes.readUInt32LE(at + 4), bytes.length - at - 8);
    const body = at + 8;
    if (id === 'fmt ') {
      format = bytes.readUInt16LE(body);
      channels = bytes.readUInt16LE(body + 2);
      sampleRate = bytes.readUInt32LE(body + 4);
      bits = bytes.readUInt16LE(body + 14);
    } else if (id === 'data') {
      const width = bits / 8;
      const frames = Math.floor(size / (width * channels));
      const samples = new Float32Array(frames);
      for (let f = 0; f < frames; f++) {
        let sum = 0;
        for (let c = 0; c < channels; c++) {
          const offset = body + (f * channels + c) * width;
          sum += format === 3 ? bytes.readFloatLE(offset) : bytes.readInt16LE(offset) / 32768;
        }
        samples[f] = sum / channels;
      }
      return { samples, sampleRate };
    }
    at = body + size + (size % 2);
  }
  throw new Error(`${path} has no data chunk`);
}
