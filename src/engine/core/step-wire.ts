// How a step event crosses from the engine worker to the HTTP thread: positional arrays instead
// of the objects themselves. Structured clone writes and reads every key of every object, so a
// step's outputs (one object per request and per completion, a dozen keys each) and its stats
// cost more to clone than the rest of the worker's per-step work above the model: measured with
// v8.serialize/deserialize, 12 -> 7 us for one output and 65 -> 32 us for 32 (both threads
// together). Nothing is left out: decodeStep(encodeStep(e)) equals e, except that the prompt's
// token ids stay behind (the frontend holds them; OutputStream puts them back).

import type { CompletionOutput, IterationStats, RequestOutput, SchedulerStats } from '../types';
import type { CoreEvent, PooledResult } from './protocol';

type StepEvent = Extract<CoreEvent, { type: 'step' }>;

/** Per completion: index, text, tokenIds, cumulativeLogprob, logprobs, finishReason, stopReason. */
const COMPLETION_FIELDS = 7;

/** [requestId, finished, numCachedTokens, promptLogprobs, error, ...COMPLETION_FIELDS per completion]. */
type WireOutput = unknown[];

export interface WireStep {
  type: 'step-wire';
  outputs: WireOutput[];
  pooled?: PooledResult[];
  /** numRunning, numWaiting, numPaused, numDeferred, kvCacheUsage, numBlocks, blockSize (null = absent). */
  stats: (number | null)[];
  /** The scalar counters, then the arrays (see encodeIteration). */
  iteration: unknown[];
}

export function encodeStep(event: StepEvent): WireStep {
  const wire: WireStep = { type: 'step-wire', outputs: event.outputs.map(encodeOutput), stats: encodeStats(event.stats), iteration: encodeIteration(event.iteration) };
  if (event.pooled !== undefined) wire.pooled = event.pooled;
  return wire;
}

export function decodeStep(wire: WireStep): StepEvent {
  const event: StepEvent = { type: 'step', outputs: wire.outputs.map(decodeOutput), stats: decodeStats(wire.stats), iteration: decodeIteration(wire.iteration) };
  if (wire.pooled !== undefined) event.pooled = wire.pooled;
  return event;
}

function encodeOutput(o: RequestOutput): WireOutput {
  const wire: unknown[] = [o.requestId, o.finished, o.numCachedTokens, o.promptLogprobs, o.error ?? null];
  for (const c of o.outputs) wire.push(c.index, c.text, c.tokenIds, c.cumulativeLogprob, c.logprobs, c.finishReason, c.stopReason);
  return wire;
}

function decodeOutput(w: WireOutput): RequestOutput {
  const outputs: CompletionOutput[] = [];
  for (let at = 5; at < w.length; at += COMPLETION_FIELDS) {
    outputs.push({
      index: w[at] as number,
      text: w[at + 1] as string,
      tokenIds: w[at + 2] as number[],
      cumulativeLogprob: w[at + 3] as CompletionOutput['cumulativeLogprob'],
      logprobs: w[at + 4] as CompletionOutput['logprobs'],
      finishReason: w[at + 5] as CompletionOutput['finishReason'],
      stopReason: w[at + 6] as CompletionOutput['stopReason'],
    });
  }
  const output: RequestOutput = {
    requestId: w[0] as string,
    promptTokenIds: [],
    promptLogprobs: w[3] as RequestOutput['promptLogprobs'],
    outputs,
    finished: w[1] as boolean,
    numCachedTokens: w[2] as number,
  };
  if (w[4] !== null) output.error = w[4] as string;
  return output;
}

function encodeStats(s: SchedulerStats): (number | null)[] {
  return [s.numRunning, s.numWaiting, s.numPaused ?? null, s.numDeferred ?? null, s.kvCacheUsage, s.numBlocks, s.blockSize];
}

function decodeStats(w: (number | null)[]): SchedulerStats {
  const stats: SchedulerStats = { numRunning: w[0]!, numWaiting: w[1]!, kvCacheUsage: w[4]!, numBlocks: w[5]!, blockSize: w[6]! };
  if (w[2] !== null) stats.numPaused = w[2];
  if (w[3] !== null) stats.numDeferred = w[3];
  return stats;
}

function encodeIteration(it: IterationStats): unknown[] {
  return [
    it.promptTokens,
    it.generationTokens,
    it.numPreemptions,
    it.prefixCacheQueries,
    it.prefixCacheHits,
    it.promptTokensCached,
    it.promptTokensRecomputed,
    it.grammarCacheHits ?? null,
    it.grammarCacheMisses ?? null,
    it.timeToFirstTokens,
    it.interTokenLatencies,
    it.finished,
    it.grammarCompileSeconds ?? null,
  ];
}

function decodeIteration(w: unknown[]): IterationStats {
  const it: IterationStats = {
    promptTokens: w[0] as number,
    generationTokens: w[1] as number,
    numPreemptions: w[2] as number,
    prefixCacheQueries: w[3] as number,
    prefixCacheHits: w[4] as number,
    promptTokensCached: w[5] as number,
    promptTokensRecomputed: w[6] as number,
    timeToFirstTokens: w[9] as number[],
    interTokenLatencies: w[10] as number[],
    finished: w[11] as IterationStats['finished'],
  };
  if (w[7] !== null) it.grammarCacheHits = w[7] as number;
  if (w[8] !== null) it.grammarCacheMisses = w[8] as number;
  if (w[12] !== null) it.grammarCompileSeconds = w[12] as number[];
  return it;
}
