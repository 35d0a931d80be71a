// The greedy sampler's argmax over one row of logits: the first index of the largest value (as
// torch.argmax), NaN never chosen unless it is the row's first value.
//
// A greedy decode step runs it once per sequence over vocabSize floats. V8's loop reads about one
// float per ns, so at vocab 32000 and 32 sequences it held the engine thread ~0.9 ms per step
// (onnxruntime's ArgMax op on [32, 32000]: 1.05 ms). The native addon's AVX2 loop
// (native/src/argmax.cc) gives the same index; rows shorter than NATIVE_FROM stay in JS, where
// the call into the addon would cost more than it saves.
// The call costs ~0.075 us, so the addon pays from short rows on. Measured per row (32 rows of
// sin-noise, 20,000 rounds, two runs each): length 128 JS 0.13-0.20 / addon 0.08 us, 256
// 0.24 / 0.09-0.11, 512 0.46-0.50 / 0.10, 1024 0.86 / 0.12. At stories260K's vocab (512) a
// batch-32 greedy step's argmax went ~15 -> ~3 us (NATIVE_FROM was 1024 before). A 4-lane JS
// max then a search for its first index was slower than the plain loop (17 against 14-15 us
// for 32 rows of 512).
//
// Measured with the greedy path that no longer copies the row (sequence-sampler.ts) and the
// segmented runner returning the head's logits without a copy, against main, interleaved under
// one lock: engine core CPU per batch-32 decode step at vocab 32000 (bench/engine-overhead over
// a runner that returns logits at once) 2224 / 2224 -> 1185 / 1138 us; served 100M Q8_0, 32
// streams of 64 tokens, the server's CPU per generated token 2122 / 2136 -> 2014 / 1914 us
// (stories260K, vocab 512: 89 / 80 -> 87 / 84, unchanged as expected). The served tok/s moved
// with the shared machine's load more than with the change (see the issue 16 report).
import { nativeKernels } from '../../model/runner/native-kernels';

/** Rows at least this long go to the addon when it is built. */
export const NATIVE_FROM = 128;

/** The JS loop (the reference the native one matches). */
export function argmaxJs(values: Float32Array, offset: number, count: number): number {
  let best = 0;
  let bestValue = values[offset];
  for (let i = 1; i < count; i++) {
    const v = values[offset + i];
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

type ArgmaxFn = (values: Float32Array, offset: number, count: number) => number;

let nativeArgmax: ArgmaxFn | null | undefined;

function loadNative(): ArgmaxFn | null {
  // Null when the addon is not built or out of date (native-kernels.ts says why once).
  const addon = nativeKernels();
  return addon ? addon.argmax.bind(addon) : null;
}

/** Index (from `offset`) of the largest of values[offset .. offset + count). */
export function argmax(values: Float32Array, offset: number, count: number): number {
  if (count >= NATIVE_FROM) {
    if (nativeArgmax === undefined) nativeArgmax = loadNative();
    if (nativeArgmax) return nativeArgmax(values, offset, count);
  }
  return argmaxJs(values, offset, count);
}
