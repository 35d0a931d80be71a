// Exact top-k / top-p thresholds without sorting the vocabulary.
//
// vLLM sorts the whole row; in JS a 32k sort per sequence per step is far too slow.
// Both filters only need a threshold value τ (keep every token with value >= τ), and τ
// can be found by radix selection on the float bit patterns: one histogram pass over
// the vocabulary on the top 11 bits, then passes over the (few) tokens left in the
// boundary bucket on the next 11 and the last 10 bits. IEEE floats map to unsigned keys
// that sort like the floats, so the bucket order is the value order.

import type { SamplingWorkspace } from './workspace';

const LEVELS: ReadonlyArray<readonly [shift: number, bits: number]> = [
  [21, 11],
  [10, 11],
  [0, 10],
];

/** Unsigned key that orders like the float whose bits are `b` (negatives reversed). */
function sortableKey(b: number): number {
  return (b & 0x80000000) !== 0 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
}

/**
 * Index of a token holding the threshold value τ among `n` floats (given by their bits):
 * the largest τ such that the weight of values >= τ reaches `target`, i.e.
 * W(values > τ) < target <= W(values >= τ). W sums `weights[i]`, or counts tokens when
 * `weights` is null. Returns -1 when the whole row weighs less than `target` (keep all).
 */
export function selectThresholdIndex(
  bits: Uint32Array,
  n: number,
  weights: Float32Array | null,
  target: number,
  ws: SamplingWorkspace,
  /** >= 0: only ws.candidates[0..numCandidates) can hold the threshold (the rest weigh less). */
  numCandidates = -1,
): number {
  const hist = ws.histogram;
  const cand = ws.candidates;
  let numCand = numCandidates; // -1: every index 0..n-1 is a candidate
  let accAbove = 0;

  for (const [shift, width] of LEVELS) {
    const numBuckets = 1 << width;
    const mask = numBuckets - 1;
    hist.fill(0, 0, numBuckets);
    if (numCand < 0) {
      if (weights) for (let i = 0; i < n; i++) hist[(sortableKey(bits[i]) >>> shift) & mask] += weights[i];
      else for (let i = 0; i < n; i++) hist[(sortableKey(bits[i]) >>> shift) & mask] += 1;
    } else {
      for (let c = 0; c < numCand; c++) {
        const i = cand[c];
        hist[(sortableKey(bits[i]) >>> shift) & mask] += weights ? weights[i] : 1;
      }
    }

    let bucket = numBuckets - 1;
    let lowestNonEmpty = -1;
    for (; bucket >= 0; bucket--) {
      const h = hist[bucket];
      if (h === 0) continue;
      lowestNonEmpty = bucket;
      if (accAbove + h >= target) break;
      accAbove += h;
    }
    if (bucket < 0) {
      // Rounding (or a target above the total): keep everything down to the lowest bucket.
      if (numCand < 0 || shift === LEVELS[0][0] || lowestNonEmpty < 0) return -1;
      bucket = lowestNonEmpty;
    }

    // Keep only the tokens of the boundary bucket for the next level.
    let next = 0;
    if (numCand < 0) {
      for (let i = 0; i < n; i++) if (((sortableKey(bits[i]) >>> shift) & mask) === bucket) cand[next++] = i;
    } else {
      for (let c = 0; c < numCand; c++) {
        const i = cand[c];
        if (((sortableKey(bits[i]) >>> shift) & mask) === bucket) cand[next++] = i;
      }
    }
    numCand = next;
    if (numCand === 0) return -1;
  }
  // All remaining candidates share every bit: they are the threshold value.
  return cand[0];
}

/** Up to this k, top-k uses one pass with a sorted insertion buffer instead of radix selection. */
export const SMALL_K = 256;

/**
 * The k-th largest of `values[0..n)` for k <= SMALL_K: one pass keeping the k largest in a
 * descending buffer; most values fail the first comparison, so it costs about one read per token.
 */
export function kthLargestSmall(values: Float32Array, n: number, k: number, ws: SamplingWorkspace): number {
  const top = ws.smallTop;
  let size = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (size === k) {
      if (!(v > top[k - 1])) continue;
    } else if (v !== v) {
      continue; // NaN
    }
    let pos = size === k ? k - 1 : size++;
    while (pos > 0 && top[pos - 1] < v) {
      top[pos] = top[pos - 1];
      pos--;
    }
    top[pos] = v;
  }
  return size < k ? -Infinity : top[k - 1];
}
