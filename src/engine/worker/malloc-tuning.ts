// Fixes glibc's mmap threshold in the server process (native/src/malloc-tuning.cc says why): the
// engine's step activations above it are mapped per step and unmapped when freed, instead of
// staying resident in the malloc arenas of the threads that freed them.
// ORTLLM_MALLOC_MMAP_THRESHOLD overrides it (bytes; 0 leaves glibc's own rising threshold).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { nativeAddonPath } from '../../model/runner/native-kernels';

const ADDON = 'native/build/Release/ortllm_malloc.node';

/**
 * Threshold in bytes (the trim threshold is set to twice it): against glibc's rising threshold it
 * cut the 1.1B model's peak RSS under 32 long prompts by ~14%, served speed within noise
 * (docs/perf/malloc.md).
 */
export const DEFAULT_MMAP_THRESHOLD = 4 * 2 ** 20;

interface MallocTuning {
  setMmapThreshold(bytes: number): boolean;
  trim(): boolean;
}

/** Applies the threshold; returns what was set (null: nothing, with `log` saying why when it was asked for). */
export function tuneMalloc(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = console.info): number | null {
  const text = env.ORTLLM_MALLOC_MMAP_THRESHOLD;
  const bytes = text === undefined || text === '' ? DEFAULT_MMAP_THRESHOLD : Number(text);
  if (!Number.isInteger(bytes) || bytes < 0) throw new Error(`ORTLLM_MALLOC_MMAP_THRESHOLD must be a byte count (0 = glibc's default), got '${text}'`);
  if (bytes === 0) return null;
  const tuning = mallocAddon();
  if (!tuning) return null;
  if (!tuning.setMmapThreshold(bytes)) {
    if (text !== undefined) log(`[engine] ORTLLM_MALLOC_MMAP_THRESHOLD: the allocator has no mmap threshold to set (not glibc)`);
    return null;
  }
  return bytes;
}

/**
 * After the sessions are built: collects the loader's weight buffers the runner let go of (V8
 * frees an ArrayBuffer's memory only when it collects it, which it may not do for a long time
 * in an idle worker), then returns the free pages of every malloc arena to the OS.
 */
export function releaseLoadCopies(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  mallocAddon()?.trim();
}

let addon: MallocTuning | null | undefined;

/** The built addon (null when native/ was not built), loaded once. */
function mallocAddon(): MallocTuning | null {
  if (addon === undefined) {
    const path = nativeAddonPath(ADDON);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    addon = path ? (require(path) as MallocTuning) : null;
  }
  return addon;
}
