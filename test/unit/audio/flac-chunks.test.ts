// FLAC pieces for the streaming decoder: they join back to the file, every piece after the
// first starts at a frame sync code, and a tone decoded from them has every sample of the file.

import { execFileSync } from 'node:child_process';
import { WHISPER_FEATURES } from '../../../src/model/audio/feature-config';
import { AudioFrontend } from '../../../src/serving/audio/audio-frontend';
import { flacChunks } from '../../../src/serving/audio/flac-chunks';
import { needs } from '../../helpers/needs';

needs('/usr/bin/ffmpeg').describe('flacChunks', () => {
  const flac = execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', '20.3', '-ac', '2', '-c:a', 'flac', '-f', 'flac', 'pipe:1']);

  it('cuts before frame syncs only and loses no byte', () => {
    const pieces = [...flacChunks(flac, 2048)];
    expect(pieces.length).toBeGreaterThan(10);
    expect(Buffer.concat(pieces).equals(flac)).toBe(true);
    for (const piece of pieces.slice(1)) expect([piece[0], piece[1] & 0xfe]).toEqual([0xff, 0xf8]);
  });

  it('lets the decoder produce every sample of the file', async () => {
    const frontend = new AudioFrontend(WHISPER_FEATURES);
    try {
      expect((await frontend.decode(flac)).samples.length).toBe(Math.ceil((20.3 * 44100 * 16000) / 44100));
    } finally {
      await frontend.close();
    }
  });
});
