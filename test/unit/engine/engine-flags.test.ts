/** @jest-environment ./test/helpers/ort-environment.js */
// Engine behaviour behind vLLM flags: the partial-prefill limits in the scheduler, --seed
// (the sampler of unseeded requests), --gpu-memory-utilization / --num-gpu-blocks-override
// in the KV plan, and the prefix-cache counters (cached and recomputed prompt tokens).

import { KvCacheManager } from '../../../src/engine/core/kv-cache-manager';
import { Scheduler, type SchedulePlan } from '../../../src/engine/core/scheduler';
import { Sequence } from '../../../src/engine/core/sequence';
import { planKvCache } from '../../../src/engine/core/kv-plan';
import { createInProcessEngine } from '../../../src/engine';
import { kvBytesPerBlock } from '../../../src/model/runner';
import type { PartialPrefillLimits } from '../../../src/engine/types';
import { needs } from '../../helpers/needs';
import { engineOptions, finalOutput, loadStories, request, STORIES } from './engine-fixtures';

const seq = (id: string, promptLen: number) => new Sequence(id, id, 0, Array.from({ length: promptLen }, (_, i) => 10 + i), promptLen, 0, null, false);

function scheduler(partialPrefills: PartialPrefillLimits, maxNumBatchedTokens = 64): Scheduler {
  return new Scheduler({ maxNumSeqs: 8, maxNumBatchedTokens, policy: 'fcfs', partialPrefills }, new KvCacheManager(64, 4, false));
}

function step(s: Scheduler): string[] {
  const plan: SchedulePlan = s.schedule();
  const sampled = new Map<string, number>();
  for (const x of plan.scheduled) if (x.sample) sampled.set(x.seq.seqId, 7);
  s.updateFromOutput(plan, sampled);
  return plan.scheduled.map((x) => `${x.seq.seqId}:${x.numNewTokens}`);
}

describe('partial prefill limits', () => {
  it('caps every prefill chunk at --long-prefill-token-threshold and limits concurrent partial prefills', () => {
    const s = scheduler({ maxNumPartialPrefills: 2, maxLongPartialPrefills: 2, longPrefillTokenThreshold: 8 });
    for (const [id, len] of [['a', 20], ['b', 20], ['c', 20]] as const) s.addSequence(seq(id, len));
    // Two long prompts prefill 8 tokens each; the third waits for a partial-prefill slot.
    expect(step(s)).toEqual(['a:8', 'b:8']);
    expect(step(s)).toEqual(['a:8', 'b:8']);
    expect(step(s)).toEqual(['a:4', 'b:4', 'c:8']);
  });

  it('lets short prompts overtake long ones beyond --max-long-partial-prefills', () => {
    const s = scheduler({ maxNumPartialPrefills: 3, maxLongPartialPrefills: 1, longPrefillTokenThreshold: 8 });
    for (const [id, len] of [['long1', 30], ['long2', 30], ['short', 6]] as const) s.addSequence(seq(id, len));
    expect(step(s)).toEqual(['long1:8', 'short:6']);
  });

  it('changes nothing with the defaults (1, 1, 0): the budget runs out once per step', () => {
    const s = scheduler({ maxNumPartialPrefills: 1, maxLongPartialPrefills: 1, longPrefillTokenThreshold: 0 }, 16);
    for (const [id, len] of [['a', 10], ['b', 10]] as const) s.addSequence(seq(id, len));
    expect(step(s)).toEqual(['a:10', 'b:6']);
  });
});

describe('KV plan', () => {
  const model = { config: { numLayers: 2, numKvHeads: 2, headDim: 8 }, contextLength: 512, weights: null } as never;
  const perBlock = kvBytesPerBlock({ numLayers: 2, numKvHeads: 2, headDim: 8 } as never, 16);
  const base = { ...engineOptions(), maxModelLen: 256, maxNumSeqs: 4, blockSize: 16, kvCacheDtype: 'float32' as const };

  it('--gpu-memory-utilization: fraction of total memory minus what is in use, capped at what the batch can use', () => {
    const memory = { freeBytes: 0, totalBytes: 1000 * perBlock, usedBytes: 500 * perBlock };
    expect(planKvCache(model, { ...base, gpuMemoryUtilization: 0.55 }, memory).numBlocks).toBe(50);
    expect(planKvCache(model, { ...base, gpuMemoryUtilization: 0.9 }, memory).numBlocks).toBe(4 * 16);
    expect(() => planKvCache(model, { ...base, gpuMemoryUtilization: 0.4 }, memory)).toThrow(/leaves no memory for the KV cache/);
    expect(() => planKvCache(model, { ...base, gpuMemoryUtilization: 0.5 }, { ...memory, totalBytes: null })).toThrow(/nvidia-smi/);
  });

  it('a byte budget holds twice the blocks at 16 bits', () => {
    const memory = { freeBytes: 0, totalBytes: 0, usedBytes: 0 };
    const budget = { ...base, maxModelLen: 16, kvCacheMemoryBytes: 10 * perBlock };
    expect(planKvCache(model, budget, memory)).toMatchObject({ numBlocks: 10, bytesPerBlock: perBlock });
    expect(planKvCache(model, { ...budget, kvCacheDtype: 'float16' }, memory)).toMatchObject({ numBlocks: 20, bytesPerBlock: perBlock / 2 });
    expect(planKvCache(model, { ...budget, kvCacheDtype: 'bfloat16' }, memory).numBlocks).toBe(20);
  });

  it('--num-gpu-blocks-override wins over every budget', () => {
    expect(planKvCache(model, { ...base, numBlocksOverride: 33, kvCacheMemoryBytes: perBlock }, { freeBytes: 0, totalBytes: 0, usedBytes: 0 }).numBlocks).toBe(33);
  });
});

needs(STORIES).describe('engine', () => {
  it('--seed makes unseeded sampling reproducible across engines, and different seeds differ', async () => {
    const model = await loadStories();
    const sample = async (seed: number): Promise<number[][]> => {
      const engine = await createInProcessEngine(model, engineOptions({ seed }));
      try {
        const out: number[][] = [];
        for (let i = 0; i < 3; i++) out.push((await finalOutput(engine, request([1, 403, 407], { temperature: 1.5, max_tokens: 12 }))).outputs[0].tokenIds);
        return out;
      } finally {
        await engine.shutdown();
      }
    };
    const a = await sample(7);
    expect(await sample(7)).toEqual(a);
    expect(await sample(8)).not.toEqual(a);
  });

  it('counts cached prompt tokens and the fully cached block it recomputes, and forgets them on reset', async () => {
    const model = await loadStories();
    const engine = await createInProcessEngine(model, engineOptions({ blockSize: 4 }));
    const cached: number[] = [];
    const recomputed: number[] = [];
    engine.onIteration((s) => {
      cached.push(s.promptTokensCached);
      recomputed.push(s.promptTokensRecomputed);
    });
    const sum = (v: number[]) => v.splice(0).reduce((a, b) => a + b, 0);
    try {
      const prompt = Array.from({ length: 12 }, (_, i) => 300 + i); // three full blocks of 4
      await finalOutput(engine, request(prompt, { max_tokens: 2 }));
      expect([sum(cached), sum(recomputed)]).toEqual([0, 0]);
      await finalOutput(engine, request(prompt, { max_tokens: 2 }));
      // Two blocks come from the cache; the third is cached too but recomputed for the logits.
      expect([sum(cached), sum(recomputed)]).toEqual([8, 4]);
      await engine.resetPrefixCache();
      await finalOutput(engine, request(prompt, { max_tokens: 2 }));
      expect([sum(cached), sum(recomputed)]).toEqual([0, 0]);
    } finally {
      await engine.shutdown();
    }
  });
});
