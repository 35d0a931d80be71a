// Logprobs on the raw model distribution (vLLM's default `logprobs_mode=raw_logprobs`:
// log_softmax of the logits before any penalty, bias, temperature or filter).
// Rank = 1 + number of tokens with a strictly larger logprob (vLLM
// `batched_count_greater_than`); top entries get ranks 1..k by position, as in vLLM.

import type { PositionLogprobs, TokenLogprob } from '../types';
import { expNonPositive } from './fast-exp';

/** log(sum(exp(row))) over `row[offset .. offset+n)`, computed stably. */
export function logSumExp(row: Float32Array, offset: number, n: number): number {
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = row[offset + i];
    if (v > max) max = v;
  }
  if (max === -Infinity) return -Infinity;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += expNonPositive(row[offset + i] - max);
  return max + Math.log(sum);
}

/** 1-based rank of `value` in the row: 1 + count of strictly larger entries. */
function rankOf(row: Float32Array, offset: number, n: number, value: number): number {
  let greater = 0;
  for (let i = 0; i < n; i++) if (row[offset + i] > value) greater++;
  return greater + 1;
}

/**
 * Indices of the k largest entries, largest first (ties: lower index first). k is small
 * (<= max_logprobs), so a sorted insertion buffer beats a heap and never sorts the row.
 */
export function topKIndices(row: Float32Array, offset: number, n: number, k: number): number[] {
  if (k <= 0) return [];
  if (k >= n) {
    const all = Array.from({ length: n }, (_, i) => i);
    all.sort((a, b) => row[offset + b] - row[offset + a] || a - b);
    return all;
  }
  const idx = new Int32Array(k);
  const val = new Float64Array(k);
  let size = 0;
  for (let i = 0; i < n; i++) {
    const v = row[offset + i];
    if (size === k && !(v > val[k - 1])) continue;
    // Insert keeping descending order; equal values keep the earlier index first.
    let pos = size === k ? k - 1 : size++;
    while (pos > 0 && val[pos - 1] < v) {
      val[pos] = val[pos - 1];
      idx[pos] = idx[pos - 1];
      pos--;
    }
    val[pos] = v;
    idx[pos] = i;
  }
  return Array.from(idx.subarray(0, size));
}

export interface LogprobsRequest {
  /** params.logprobs (or prompt_logprobs): top entries to list; -1 = whole vocabulary; null = none. */
  numTop: number | null;
  /** Explicit ids to report instead of the top-k (logprob_token_ids). */
  tokenIds: readonly number[] | null;
}

/** True when the sequence asked for any per-position logprobs. */
export function wantsLogprobs(req: LogprobsRequest): boolean {
  return req.numTop != null || (req.tokenIds != null && req.tokenIds.length > 0);
}

/**
 * Logprobs of one position from raw logits `row[offset .. offset+n)`: the chosen token's
 * logprob and rank, plus the top entries (or the explicit ids, each with its true rank).
 * `logZ` may be passed when already computed.
 */
export function positionLogprobs(
  row: Float32Array,
  offset: number,
  n: number,
  chosenId: number,
  req: LogprobsRequest,
  logZ: number = logSumExp(row, offset, n),
): PositionLogprobs {
  const entry = (tokenId: number, rank: number): TokenLogprob => ({
    tokenId,
    logprob: row[offset + tokenId] - logZ,
    rank,
  });
  const chosen = entry(chosenId, rankOf(row, offset, n, row[offset + chosenId]));
  let top: TokenLogprob[];
  if (req.tokenIds != null && req.tokenIds.length > 0) {
    top = req.tokenIds.map((id) => entry(id, rankOf(row, offset, n, row[offset + id])));
  } else if (req.numTop != null && req.numTop !== 0) {
    const k = req.numTop === -1 ? n : Math.min(req.numTop, n);
    top = topKIndices(row, offset, n, k).map((id, i) => entry(id, i + 1));
  } else {
    top = [];
  }
  return { chosen, top };
}

/**
 * Prompt logprobs for a chunk of prompt rows. Row r of `allLogits` holds the logits at
 * absolute position `firstPosition + r`, which predict prompt token `firstPosition + r + 1`.
 * Returns the entries for prompt positions firstPosition+1 .. (capped at the prompt end), in
 * order; the caller prepends null for position 0 (vLLM's first entry is None).
 */
export function promptLogprobsForRows(
  allLogits: Float32Array,
  vocabSize: number,
  promptTokenIds: readonly number[],
  firstPosition: number,
  numRows: number,
  req: LogprobsRequest,
): PositionLogprobs[] {
  const out: PositionLogprobs[] = [];
  for (let r = 0; r < numRows; r++) {
    const target = firstPosition + r + 1;
    if (target >= promptTokenIds.length) break;
    out.push(positionLogprobs(allLogits, r * vocabSize, vocabSize, promptTokenIds[target], req));
  }
  return out;
}
