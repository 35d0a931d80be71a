// The worker's step events cross to the HTTP thread as positional arrays (core/step-wire.ts):
// every field must come back as it was, through a real structured clone.
import { deserialize, serialize } from 'node:v8';
import { decodeStep, encodeStep } from '../../../src/engine/core/step-wire';
import type { CoreEvent } from '../../../src/engine/core/protocol';
import { emptyIterationStats } from '../../../src/engine/core/engine-core';

type StepEvent = Extract<CoreEvent, { type: 'step' }>;

const roundTrip = (event: StepEvent): StepEvent => decodeStep(deserialize(serialize(encodeStep(event))) as ReturnType<typeof encodeStep>);

/** The same keys at every level (toEqual alone takes an absent key and an undefined one as equal). */
function sameKeys(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return true;
  if (ArrayBuffer.isView(a)) return ArrayBuffer.isView(b);
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.join() === kb.join() && ka.every((k) => sameKeys((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

describe('step wire format', () => {
  it('carries every field of outputs, stats and iteration stats (prompt ids stay behind)', () => {
    const logprobs = [{ chosen: { tokenId: 7, logprob: -0.5, rank: 1 }, top: [{ tokenId: 7, logprob: -0.5, rank: 1 }] }];
    const event: StepEvent = {
      type: 'step',
      outputs: [
        {
          requestId: 'cmpl-1',
          promptTokenIds: [],
          promptLogprobs: [null, { chosen: { tokenId: 3, logprob: -1.25, rank: 2 }, top: [] }] as never,
          outputs: [
            { index: 0, text: ' Once', tokenIds: [345], cumulativeLogprob: -0.5, logprobs, finishReason: null, stopReason: null },
            { index: 2, text: '', tokenIds: [1, 2], cumulativeLogprob: null, logprobs: null, finishReason: 'stop', stopReason: 'the end' },
            { index: 3, text: 'x', tokenIds: [], cumulativeLogprob: null, logprobs: null, finishReason: 'stop', stopReason: 13 },
          ],
          finished: false,
          numCachedTokens: 32,
        },
        {
          requestId: 'cmpl-2',
          promptTokenIds: [],
          promptLogprobs: null,
          outputs: [{ index: 0, text: '', tokenIds: [], cumulativeLogprob: null, logprobs: null, finishReason: 'error', stopReason: null }],
          finished: true,
          numCachedTokens: 0,
          error: 'model step failed: boom',
        },
        {
          requestId: 'cmpl-3',
          promptTokenIds: [],
          promptLogprobs: null,
          outputs: [{ index: 0, text: ' She', tokenIds: [9], cumulativeLogprob: null, logprobs: null, finishReason: 'length', stopReason: null }],
          finished: true,
          numCachedTokens: 0,
          kvTransferParams: { do_remote_prefill: true, remote_block_ids: [4, 5], remote_port: 5600 },
        },
      ],
      stats: { numRunning: 2, numWaiting: 1, numPaused: 0, numDeferred: 1, kvCacheUsage: 0.25, numBlocks: 64, blockSize: 16, runningLoraAdapters: ['sql', 'chat'], waitingLoraAdapters: ['chat'] },
      iteration: {
        ...emptyIterationStats(),
        promptTokens: 40,
        generationTokens: 3,
        timeToFirstTokens: [0.012],
        interTokenLatencies: [0.001, 0.002],
        finished: [
          {
            finishReason: 'length',
            e2eLatency: 1,
            queueTime: 0.1,
            prefillTime: 0.2,
            decodeTime: 0.7,
            inferenceTime: 0.9,
            promptTokens: 40,
            generationTokens: 8,
            maxTokensParam: null,
            n: 1,
            maxGenerationTokens: 8,
          },
        ],
        numPreemptions: 1,
        prefixCacheQueries: 48,
        prefixCacheHits: 32,
        promptTokensCached: 32,
        promptTokensRecomputed: 16,
        grammarCompileSeconds: [0.5],
        grammarCacheHits: 2,
        grammarCacheMisses: 1,
        specDecoding: { numDrafts: 3, numDraftTokens: 10, numAcceptedTokens: 6, acceptedPerPosition: [3, 2, 1, 0] },
        kvTransfer: { transferSeconds: [0.012], transferBytes: [40960], numFailedTransfers: 1, numExpired: 2 },
        promptTokensBySource: { localCompute: 8, localCacheHit: 48, externalKvTransfer: 31 },
      },
    };
    const back = roundTrip(event);
    // toEqual: the clone's arrays come from Node's realm, not the test's (toStrictEqual compares prototypes).
    expect(back).toEqual(event);
    expect(sameKeys(back, event)).toBe(true);
    expect(back.outputs[1].error).toBe('model step failed: boom');
    expect(back.outputs[2].kvTransferParams).toEqual({ do_remote_prefill: true, remote_block_ids: [4, 5], remote_port: 5600 });
  });

  it('keeps optional fields absent and pooled results as they are', () => {
    const iteration = emptyIterationStats();
    delete iteration.grammarCompileSeconds;
    delete iteration.grammarCacheHits;
    delete iteration.grammarCacheMisses;
    const event: StepEvent = {
      type: 'step',
      outputs: [],
      pooled: [{ requestId: 'embd-1', data: Float32Array.from([0.5, -1]) }, { requestId: 'embd-2', error: 'too long' }],
      stats: { numRunning: 0, numWaiting: 0, kvCacheUsage: 0, numBlocks: 0, blockSize: 16 },
      iteration,
    };
    const back = roundTrip(event);
    // The vectors compared as plain arrays (the clone's Float32Array is of Node's realm).
    const plain = (e: StepEvent) => ({ ...e, pooled: e.pooled!.map((p) => ('data' in p ? { ...p, data: Array.from(p.data) } : p)) });
    expect(plain(back)).toEqual(plain(event));
    expect(sameKeys(back, event)).toBe(true);
    expect(Object.keys(back.stats).sort()).toEqual(['blockSize', 'kvCacheUsage', 'numBlocks', 'numRunning', 'numWaiting']);
    expect(Object.keys(back.iteration)).not.toContain('grammarCacheHits');
    expect(Object.keys(back.iteration)).not.toContain('specDecoding');
  });
});
