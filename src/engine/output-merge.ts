// Folding a request's queued outputs into one, as vLLM's RequestOutputCollector does when its
// consumer has not taken the previous output yet (RequestOutput.add): a consumer that fell
// behind gets fewer, larger outputs instead of working through a backlog one step at a time.
//
// DELTA outputs carry only what is new, so they are appended per completion index (text, token
// ids, logprobs in order); the newer output's state (cumulative logprob, finish and stop reason,
// cached tokens, finished) wins, and prompt logprobs stay with the first (DELTA sends them once).
// CUMULATIVE and FINAL_ONLY outputs already hold everything: the newer one replaces the older
// per completion index. An output with an error is never folded (see canMerge).

import { OUTPUT_KIND, type CompletionOutput, type OutputKind, type RequestOutput } from './types';

/**
 * Whether `newer` may be folded into `older`. An error output stays on its own: consumers throw
 * on it, and the outputs queued before it must still reach the client first.
 */
export function canMerge(older: RequestOutput, newer: RequestOutput): boolean {
  return !older.finished && older.error === undefined && newer.error === undefined;
}

/** Folds `newer` into `older` (which the caller owns and no one else has seen) and returns it. */
export function mergeInto(older: RequestOutput, newer: RequestOutput, kind: OutputKind): RequestOutput {
  const delta = kind === OUTPUT_KIND.DELTA;
  for (const next of newer.outputs) {
    const at = older.outputs.findIndex((o) => o.index === next.index);
    if (at < 0) older.outputs.push(next);
    else if (delta) appendDelta(older.outputs[at], next);
    else older.outputs[at] = next;
  }
  if (!delta || older.promptLogprobs === null) older.promptLogprobs = newer.promptLogprobs;
  older.numCachedTokens = newer.numCachedTokens;
  if (newer.kvTransferParams) older.kvTransferParams = newer.kvTransferParams;
  older.finished = newer.finished;
  return older;
}

function appendDelta(into: CompletionOutput, next: CompletionOutput): void {
  into.text += next.text;
  for (const id of next.tokenIds) into.tokenIds.push(id);
  if (next.logprobs !== null) {
    if (into.logprobs === null) into.logprobs = next.logprobs;
    else for (const lp of next.logprobs) into.logprobs.push(lp);
  }
  into.cumulativeLogprob = next.cumulativeLogprob;
  // A completion that finished is not sent again; `??` keeps its reason if it ever were.
  into.finishReason = next.finishReason ?? into.finishReason;
  into.stopReason = next.finishReason !== null ? next.stopReason : into.stopReason;
}
