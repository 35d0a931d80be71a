// How a step event crosses from the engine worker to the HTTP thread: one flat positional array
// instead of the objects themselves, and the message an array too, not an object around them.
// Structured clone writes and reads every key of every object (a dozen per output), one at a time
// on the reading side, and the HTTP thread, which reads, is the busier one at high concurrency
// (docs/perf/engine-overhead.md).
// decodeStep(encodeStep(e)) equals e, except that the prompt's token ids stay behind (the
// frontend holds them; OutputStream puts them back). isWireStep tells steps from other events.

import type { CompletionOutput, IterationStats, KvTransferStats, PromptTokenSources, RequestOutput, SchedulerStats, SpecDecodingStats } from '../types';
import type { CoreEvent, PooledResult } from './protocol';

type StepEvent = Extract<CoreEvent, { type: 'step' }>;

/**
 * A step event as one flat array: the stats (STATS_LENGTH entries, see encodeStats), the
 * iteration stats (ITERATION_LENGTH, see encodeIteration), the pooled results (or null), then
 * every output: per output requestId, finished, numCachedTokens, promptLogprobs, error (null =
 * none), kvTransferParams (null = none), its number of completions, then per completion index, text, tokenIds,
 * cumulativeLogprob, logprobs, finishReason, stopReason.
 */
export type WireStep = unknown[];

const STATS_LENGTH = 9;
const ITERATION_LENGTH = 18;
const POOLED_AT = STATS_LENGTH + ITERATION_LENGTH;
const OUTPUTS_AT = POOLED_AT + 1;

/** Whether a message from the worker is a step (the other events are objects with a `type`). */
export function isWireStep(message: unknown): message is WireStep {
  return Array.isArray(message);
}

export function encodeStep(event: StepEvent): WireStep {
  const wire: unknown[] = [];
  encodeStats(wire, event.stats);
  encodeIteration(wire, event.iteration);
  wire.push(event.pooled ?? null);
  encodeOutputs(wire, event.outputs);
  return wire;
}

export function decodeStep(wire: WireStep): StepEvent {
  const event: StepEvent = { type: 'step', outputs: decodeOutputs(wire), stats: decodeStats(wire), iteration: decodeIteration(wire) };
  if (wire[POOLED_AT] !== null) event.pooled = wire[POOLED_AT] as PooledResult[];
  return event;
}

function encodeOutputs(wire: unknown[], outputs: readonly RequestOutput[]): void {
  for (const o of outputs) {
    wire.push(o.requestId, o.finished, o.numCachedTokens, o.promptLogprobs, o.error ?? null, o.kvTransferParams ?? null, o.outputs.length);
    for (const c of o.outputs) wire.push(c.index, c.text, c.tokenIds, c.cumulativeLogprob, c.logprobs, c.finishReason, c.stopReason);
  }
}

function decodeOutputs(w: WireStep): RequestOutput[] {
  const outputs: RequestOutput[] = [];
  let at = OUTPUTS_AT;
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
    if (w[at + 5] !== null) output.kvTransferParams = w[at + 5] as Record<string, unknown>;
    const count = w[at + 6] as number;
    at += 7;
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

function encodeStats(wire: unknown[], s: SchedulerStats): void {
  wire.push(s.numRunning, s.numWaiting, s.numPaused ?? null, s.numDeferred ?? null, s.kvCacheUsage, s.numBlocks, s.blockSize, s.runningLoraAdapters ?? null, s.waitingLoraAdapters ?? null);
}

function decodeStats(w: WireStep): SchedulerStats {
  const stats: SchedulerStats = { numRunning: w[0] as number, numWaiting: w[1] as number, kvCacheUsage: w[4] as number, numBlocks: w[5] as number, blockSize: w[6] as number };
  if (w[2] !== null) stats.numPaused = w[2] as number;
  if (w[3] !== null) stats.numDeferred = w[3] as number;
  if (w[7] !== null) stats.runningLoraAdapters = w[7] as string[];
  if (w[8] !== null) stats.waitingLoraAdapters = w[8] as string[];
  return stats;
}

/** The scalar counters, then the arrays: ITERATION_LENGTH entries. */
function encodeIteration(wire: unknown[], it: IterationStats): void {
  wire.push(
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
    it.specDecoding ?? null,
    it.kvTransfer ?? null,
    it.promptTokensBySource ?? null,
    it.mmCacheQueries ?? null,
    it.mmCacheHits ?? null,
  );
}

function decodeIteration(w: WireStep): IterationStats {
  const at = STATS_LENGTH;
  const it: IterationStats = {
    promptTokens: w[at] as number,
    generationTokens: w[at + 1] as number,
    numPreemptions: w[at + 2] as number,
    prefixCacheQueries: w[at + 3] as number,
    prefixCacheHits: w[at + 4] as number,
    promptTokensCached: w[at + 5] as number,
    promptTokensRecomputed: w[at + 6] as number,
    timeToFirstTokens: w[at + 9] as number[],
    interTokenLatencies: w[at + 10] as number[],
    finished: w[at + 11] as IterationStats['finished'],
  };
  if (w[at + 7] !== null) it.grammarCacheHits = w[at + 7] as number;
  if (w[at + 8] !== null) it.grammarCacheMisses = w[at + 8] as number;
  if (w[at + 12] !== null) it.grammarCompileSeconds = w[at + 12] as number[];
  if (w[at + 13] !== null) it.specDecoding = w[at + 13] as SpecDecodingStats;
  if (w[at + 14] !== null) it.kvTransfer = w[at + 14] as KvTransferStats;
  if (w[at + 15] !== null) it.promptTokensBySource = w[at + 15] as PromptTokenSources;
  if (w[at + 16] !== null) it.mmCacheQueries = w[at + 16] as number;
  if (w[at + 17] !== null) it.mmCacheHits = w[at + 17] as number;
  return it;
}
