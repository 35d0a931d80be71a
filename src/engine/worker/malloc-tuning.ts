// Fixes glibc's mmap threshold in the server process (native/src/malloc-tuning.cc says why): the
// engine's step activations above it are mapped per step and unmapped when freed, instead of
// staying resident in the malloc arenas of the threads that freed them. Measured figures are in
// DEFAULT_MMAP_THRESHOLD's comment. ORTLLM_MALLOC_MMAP_THRESHOLD overrides it (bytes; 0 leaves
// glibc's own rising threshold).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { nativeAddonPath } from '../../model/runner/native-kernels';

const ADDON = 'native/build/Release/ortllm_malloc.node';

/**
 * Threshold in bytes (the trim threshold is set to twice it). Measured (issue 16) on the 1.1B
 * Q8_0 bench model, 32 distinct ~700-token prompts at once (max_tokens 32), `--max-num-seqs 32
 * --max-model-len 1024`, peak RSS (VmHWM): glibc's rising threshold 3579 MiB (float32 KV) and
 * 2970 (float16 KV, with releaseLoadCopies); MALLOC_MMAP_THRESHOLD_=131072 in the environment
 * 2959 (float32 KV); 4 MiB with releaseLoadCopies and float16 KV 2566, 2602 with the trim
 * threshold at 8 MiB (llama-server, same prompts: 1915). Served speed (`node dist/bench/serve.js --models stories,100m --prompts short,long
 * --concurrency 1,32 --max-tokens 64 --peer none`, ORTLLM_MALLOC_MMAP_THRESHOLD=0 against the
 * default, interleaved, two rounds) moved within the machine's noise (runs of the same setting
 * differed by up to 40%): 100M short c1 130/146 -> 150/161 tok/s, c32 778/761 -> 700/758, long
 * c1 42.6/61.3 -> 54.8/58.2, c32 75.7/88.1 -> 79.7/80.3; stories260K short c32 9900/10854/5857
 * -> 8507/6801 (4 MiB alone), 9297 (with the trim threshold).
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
