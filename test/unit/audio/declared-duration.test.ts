// The length a container declares, read from the headers of files ffmpeg wrote: every format the
// reader knows gives the real length, a file written to a pipe (no length in its header) and an
// unknown format give null, and truncated headers never throw.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaredDurationSeconds } from '../../../src/serving/audio/declared-duration';
import { needs } from '../../helpers/needs';
import { tempDir } from '../../helpers/speech';

const ENCODINGS: Record<string, { format: string; args: string[] }> = {
  wav: { format: 'wav', args: [] },
  flac: { format: 'flac', args: ['-c:a', 'flac'] },
  ogg: { format: 'oga', args: ['-c:a', 'libvorbis'] },
  opus: { format: 'opus', args: ['-c:a', 'libopus'] },
  mp3: { format: 'mp3', args: ['-c:a', 'libmp3lame', '-b:a', '64k'] },
  'cbr.mp3': { format: 'mp3', args: ['-c:a', 'libmp3lame', '-b:a', '32k', '-write_xing', '0'] },
  m4a: { format: 'm4a', args: ['-c:a', 'aac'] },
};

needs('/usr/bin/ffmpeg').describe('declaredDurationSeconds', () => {
  const dir = tempDir('ortllm-declared-');
  const encode = (name: string, args: string[], seconds: number) => {
    const path = join(dir.path, `tone.${name}`);
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', String(seconds), ...args, path]);
    return readFileSync(path);
  };
  afterAll(() => dir.remove());

  it.each(Object.keys(ENCODINGS))('reads the length of a %s file', (name) => {
    const { format, args } = ENCODINGS[name];
    const bytes = encode(name, args, 7.5);
    // Lossy encoders' priming and padding add a few hundredths of a second.
    expect(declaredDurationSeconds(bytes, format)).toBeCloseTo(7.5, 1);
    for (const cut of [0, 3, 20, 40]) expect(() => declaredDurationSeconds(bytes.subarray(0, cut), format)).not.toThrow();
  });

  it('gives null for a FLAC written to a pipe and for formats it does not read', () => {
    const piped = execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-t', '3', '-c:a', 'flac', '-f', 'flac', 'pipe:1']);
    expect(declaredDurationSeconds(piped, 'flac')).toBeNull();
    expect(declaredDurationSeconds(encode('webm', ['-c:a', 'libopus'], 1), 'webm')).toBeNull();
  });
});
