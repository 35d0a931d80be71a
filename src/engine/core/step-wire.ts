// How a step event crosses from the engine worker to the HTTP thread: flat positional arrays
// instead of the objects themselves. Structured clone writes and reads every key of every
// object, and a step's outputs are one object per request and per completion, a dozen keys each.
// Measured with v8.serialize/deserialize on 32 one-token outputs (a step at 32 streams): 24-40 us
// to write and 42-70 us to read the objects, against 13-21 us and 14-24 us for encode + write and
// read + decode here (three runs); for one output it is about even (3-6 us each way). The HTTP
// thread, which reads, is the busier one at high concurrency. Nothing is left out:
// decodeStep(encodeStep(e)) equals e, except that the prompt's token ids stay behind (the
// frontend holds them; OutputStream puts them back).

import type { CompletionOutput, IterationStats, RequestOutput, SchedulerStats } from '../types';
import type { CoreEvent, PooledResult } from './protocol';

type StepEvent = Extract<CoreEvent, { type: 'step' }>;

/**
 * Every output of the step in one flat array: per output requestId, finished, numCachedTokens,
 * promptLogprobs, error (null = none), its number of completions, then per completion index,
 * text, tokenIds, cumulativeLogprob, logprobs, finishReason, stopReason.
 */
type WireOutputs = unknown[];

export interface WireStep {
  type: 'step-wire';
  outputs: WireOutputs;
  pooled?: PooledResult[];
  /** numRunning, numWaiting, numPaused, numDeferred, kvCacheUsage, numBlocks, blockSize (null = absent). */
  stats: (number | null)[];
  /** The scalar counters, then the arrays (see encodeIteration). */
  iteration: unknown[];
}

export function encodeStep(event: StepEvent): WireStep {
  const wire: WireStep = { type: 'step-wire', outputs: encodeOutputs(event.outputs), stats: encodeStats(event.stats), iteration: encodeIteration(event.iteration) };
  if (event.pooled !== undefined) wire.pooled = event.pooled;
  return wire;
}

export function decodeStep(wire: WireStep): StepEvent {
  const event: StepEvent = { type: 'step', outputs: decodeOutputs(wire.outputs), stats: decodeStats(wire.stats), iteration: decodeIteration(wire.iteration) };
  if (wire.pooled !== undefined) event.pooled = wire.pooled;
  return event;
}

function encodeOutputs(outputs: readonly RequestOutput[]): WireOutputs {
  const wire: unknown[] = [];
  for (const o of outputs) {
    wire.push(o.requestId, o.finished, o.numCachedTokens, o.promptLogprobs, o.error ?? null, o.outputs.length);
    for (const c of o.outputs) wire.push(c.index, c.text, c.tokenIds, c.cumulativeLogprob, c.logprobs, c.finishReason, c.stopReason);
  }
  return wire;
}

function decodeOutputs(w: WireOutputs): RequestOutput[] {
  const outputs: RequestOutput[] = [];
  let at = 0;
  while (at < w.length) {
    const output: RequestOutput = {
      requestId: w[at] as string,
      promptTokenIds: [],
      promptLogprobs: w[at + 3] as RequestOutput['promptLogprobs'],
      outputs: [],
      finished: w[at + 1] as boolean,
      numCachedTokens: w[at + 2] as number,
    };
    if (w[at + 4] !== null) output.error = w[at + 4] as string;
    const count = w[at + 5] as number;
    at += 6;
    for (let i = 0; i < count; i++, at += 7) {
      output.outputs.push({
        index: w[at] as number,
        text: w[at + 1] as string,
        tokenIds: w[at + 2] as number[],
        cumulativeLogprob: w[at + 3] as CompletionOutput['cumulativeLogprob'],
        logprobs: w[at + 4] as CompletionOutput['logprobs'],
        finishReason: w[at + 5] as CompletionOutput['finishReason'],
        stopReason: w[at + 6] as CompletionOutput['stopReason'],
      });
    }
    outputs.push(output);
  }
  return outputs;
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
