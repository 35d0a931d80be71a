// The audio front end's queue (the real worker thread): one file decodes at a time, a full
// queue answers EngineOverloadedError (503 with Retry-After), and a job whose client leaves is
// dropped whether it waits or is being decoded, without harming the jobs after it.

import { execFileSync } from 'node:child_process';
import { WHISPER_FEATURES } from '../../../src/model/audio/feature-config';
import { EngineOverloadedError } from '../../../src/engine/errors';
import { AudioFrontend } from '../../../src/serving/audio/audio-frontend';
import { needs } from '../../helpers/needs';

const silence = (seconds: number) =>
  execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=48000:cl=stereo', '-t', String(seconds), '-c:a', 'flac', '-f', 'flac', 'pipe:1']);

needs('/usr/bin/ffmpeg').describe('AudioFrontend queue', () => {
  const slow = silence(60);
  const short = silence(1);

  it('refuses uploads beyond the waiting limit and drops the ones whose client left', async () => {
    const frontend = new AudioFrontend(WHISPER_FEATURES, { maxWaiting: 1 });
    try {
      const running = frontend.decode(slow);
      const leaving = new AbortController();
      const waiting = frontend.decode(short, leaving.signal);
      const refused = frontend.decode(short).catch((e: unknown) => e);
      expect(await refused).toBeInstanceOf(EngineOverloadedError);
      expect((await refused as EngineOverloadedError).retryAfterSeconds).toBeGreaterThan(0);
      leaving.abort();
      await expect(waiting).rejects.toThrow(/client left/);
      expect((await running).durationSeconds).toBe(60);
    } finally {
      await frontend.close();
    }
  }, 60_000);

  it('stops the decode in progress when its client leaves and serves the next job', async () => {
    const frontend = new AudioFrontend(WHISPER_FEATURES);
    try {
      const leaving = new AbortController();
      const running = frontend.decode(slow, leaving.signal);
      const next = frontend.decode(short);
      await new Promise((r) => setTimeout(r, 300));
      const abortedAt = performance.now();
      leaving.abort();
      await expect(running).rejects.toThrow(/client left/);
      expect((await next).durationSeconds).toBe(1);
      // The next job did not wait for the abandoned 60 s decode to finish.
      expect(performance.now() - abortedAt).toBeLessThan(2000);
    } finally {
      await frontend.close();
    }
  }, 60_000);
});
