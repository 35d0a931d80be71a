// The server's fixed glibc mmap threshold (src/engine/worker/malloc-tuning.ts).
import { join } from 'node:path';
import { DEFAULT_MMAP_THRESHOLD, releaseLoadCopies, tuneMalloc } from '../../../src/engine/worker/malloc-tuning';
import { needs } from '../../helpers/needs';
import { REPO_ROOT } from '../../helpers/server';

const ADDON = join(REPO_ROOT, 'native/build/Release/ortllm_malloc.node');
const glibc = Boolean((process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime);

describe('malloc tuning', () => {
  it('refuses a value that is not a byte count, and leaves glibc alone at 0', () => {
    expect(() => tuneMalloc({ ORTLLM_MALLOC_MMAP_THRESHOLD: '4MiB' })).toThrow(/ORTLLM_MALLOC_MMAP_THRESHOLD must be a byte count/);
    expect(() => tuneMalloc({ ORTLLM_MALLOC_MMAP_THRESHOLD: '-1' })).toThrow(/byte count/);
    expect(tuneMalloc({ ORTLLM_MALLOC_MMAP_THRESHOLD: '0' })).toBeNull();
  });

  needs(ADDON).it('sets the threshold (the default, or the variable\'s) on glibc, and releases free memory', () => {
    const log = jest.fn();
    expect(tuneMalloc({}, log)).toBe(glibc ? DEFAULT_MMAP_THRESHOLD : null);
    expect(tuneMalloc({ ORTLLM_MALLOC_MMAP_THRESHOLD: String(2 ** 20) }, log)).toBe(glibc ? 2 ** 20 : null);
    expect(log).toHaveBeenCalledTimes(glibc ? 0 : 1);
    expect(() => releaseLoadCopies()).not.toThrow();
  });
});
