// Decoding uploads in the audio worker (the real worker thread and decoders): espeak-ng speech
// encoded by ffmpeg into every container the endpoint documents decodes to the same 16 kHz signal
// as the WAV (correlation > 0.99), stereo is down-mixed, and bad files are
// AudioInputErrors that leave the worker serving the next file.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WHISPER_FEATURES } from '../../../src/model/audio/feature-config';
import { AudioFrontend } from '../../../src/serving/audio/audio-frontend';
import { AudioInputError } from '../../../src/serving/audio/decode-audio';
import { ffmpegEncode, FFMPEG_FORMATS, SPEECH_TOOLS, readWav, soxToWav, speak, tempDir } from '../../helpers/speech';
import { needs } from '../../helpers/needs';

/** Largest normalised cross-correlation of a and b over lags -maxLag..maxLag. */
function bestCorrelation(a: Float32Array, b: Float32Array, maxLag: number): number {
  let best = -1;
  for (let lag = -maxLag; lag <= maxLag; lag++) {
    let ab = 0;
    let aa = 0;
    let bb = 0;
    for (let i = Math.max(0, -lag); i < a.length && i + lag < b.length; i++) {
      ab += a[i] * b[i + lag];
      aa += a[i] * a[i];
      bb += b[i + lag] * b[i + lag];
    }
    best = Math.max(best, ab / Math.sqrt(aa * bb));
  }
  return best;
}

const withSpeechTools = needs(...SPEECH_TOOLS);

withSpeechTools.describe('audio front end: decoding uploads', () => {
  const dir = tempDir('ortllm-decode-');
  const frontend = new AudioFrontend(WHISPER_FEATURES);
  let wavPath: string;
  let reference: Float32Array;

  beforeAll(async () => {
    wavPath = speak('The quick brown fox jumps over the lazy dog, twice.', join(dir.path, 'speech.wav'));
    reference = (await frontend.decode(readFileSync(wavPath))).samples;
  });
  afterAll(async () => {
    await frontend.close();
    dir.remove();
  });

  it('decodes the WAV like sox resamples it to 16 kHz', async () => {
    const sox = readWav(soxToWav(wavPath, join(dir.path, 'sox16k.wav'), 16000)).samples;
    expect(Math.abs(reference.length - sox.length)).toBeLessThanOrEqual(2);
    expect(bestCorrelation(reference, sox, 4)).toBeGreaterThan(0.999);
  });

  it.each(Object.keys(FFMPEG_FORMATS) as Array<keyof typeof FFMPEG_FORMATS>)('decodes %s to the WAV\'s signal (correlation > 0.99)', async (format) => {
    const file = ffmpegEncode(wavPath, dir.path, 'speech', format);
    const decoded = await frontend.decode(readFileSync(file));
    // Lossy codecs' encoder delay and padding are removed by the decoders (gapless info, edit lists, pre-skip).
    expect(Math.abs(decoded.durationSeconds - reference.length / 16000)).toBeLessThan(0.01);
    expect(bestCorrelation(reference, decoded.samples, 8)).toBeGreaterThan(0.99);
  });

  it('down-mixes stereo to the mean of the channels', async () => {
    // Left: the speech; right: silence -> mono = speech / 2.
    const stereo = join(dir.path, 'stereo.wav');
    const { execFileSync } = await import('node:child_process');
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', wavPath, '-filter_complex', '[0:a]pan=stereo|c0=c0|c1=0*c0[a]', '-map', '[a]', stereo]);
    const decoded = (await frontend.decode(readFileSync(stereo))).samples;
    expect(decoded.length).toBe(reference.length);
    let maxDiff = 0;
    for (let i = 0; i < decoded.length; i++) maxDiff = Math.max(maxDiff, Math.abs(decoded[i] - reference[i] / 2));
    expect(maxDiff).toBeLessThan(1e-3);
  });

  it('prepares windows of log-mel features with their offsets', async () => {
    const prepared = await frontend.prepare(readFileSync(ffmpegEncode(wavPath, dir.path, 'speech', 'mp3')));
    expect(prepared.windows.length).toBe(1);
    expect(prepared.windows[0].startSeconds).toBe(0);
    expect(prepared.windows[0].features.length).toBe(80 * 3000);
    expect(prepared.durationSeconds).toBeCloseTo(reference.length / 16000, 1);
  });

  it('answers bad files with AudioInputError and keeps serving', async () => {
    const mp3 = readFileSync(ffmpegEncode(wavPath, dir.path, 'speech', 'mp3'));
    const corrupted = Buffer.from(mp3);
    for (let i = 400; i < corrupted.length; i += 29) corrupted[i] ^= 0xa5;
    const cases: Array<[string, Uint8Array]> = [
      ['empty', new Uint8Array(0)],
      ['text', Buffer.from('this is not audio, just text pretending to be a file')],
      ['a WAV header without samples', readFileSync(wavPath).subarray(0, 44)],
    ];
    for (const [, bytes] of cases) await expect(frontend.decode(bytes)).rejects.toBeInstanceOf(AudioInputError);
    // Damaged but recognisable files either decode (to something) or fail as the client's error.
    for (const bytes of [corrupted, mp3.subarray(0, mp3.length >> 1)]) {
      const outcome = await frontend.decode(bytes).then(
        (d) => d.samples.length,
        (e: unknown) => e,
      );
      if (typeof outcome !== 'number') expect(outcome).toBeInstanceOf(AudioInputError);
    }
    expect((await frontend.decode(readFileSync(wavPath))).samples.length).toBe(reference.length);
  });

  it('refuses audio longer than the limit while decoding', async () => {
    const short = new AudioFrontend(WHISPER_FEATURES, { maxSeconds: 1 });
    try {
      await expect(short.decode(readFileSync(wavPath))).rejects.toThrow(/longer than 1 seconds/);
    } finally {
      await short.close();
    }
  });
});
