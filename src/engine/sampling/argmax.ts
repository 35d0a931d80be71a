// The greedy sampler's argmax over one row of logits: the first index of the largest value (as
// torch.argmax), NaN never chosen unless it is the row's first value.
//
// A greedy decode step runs it once per sequence over vocabSize floats, which in V8's loop was a
// large share of a step at big vocabularies; the native addon's AVX2 loop (native/src/argmax.cc)
// gives the same index. Rows shorter than NATIVE_FROM stay in JS, where the call into the addon
// would cost more than it saves. Figures: docs/perf/sampling.md.
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
