// The scheduler's LoRA rules, with no model: at most --max-loras distinct adapters in the running
// batch (the base model not counted), a waiting sequence whose adapter would exceed it or is not
// loaded skipped in place while those behind it join, and prefix-cache blocks keyed by adapter.

import { KvCacheManager } from '../../../src/engine/core/kv-cache-manager';
import { Scheduler, type SchedulePlan } from '../../../src/engine/core/scheduler';
import { Sequence } from '../../../src/engine/core/sequence';
import type { LoraRequest } from '../../../src/engine/types';
import { stepScheduler } from '../../helpers/scheduler-step';

const adapter = (id: number): LoraRequest => ({ name: `ad${id}`, id, path: `/adapters/${id}` });

function makeScheduler(maxLoras: number, ready: (lora: LoraRequest) => boolean = () => true, maxNumSeqs = 16) {
  const kv = new KvCacheManager(256, 4, true);
  const scheduler = new Scheduler({ maxNumSeqs, maxNumBatchedTokens: 256, policy: 'fcfs', lora: { maxLoras, ready } }, kv);
  return { kv, scheduler };
}

function seq(id: string, lora: number, opts: { promptLen?: number; salt?: string | null; tokens?: number[] } = {}) {
  const tokens = opts.tokens ?? Array.from({ length: opts.promptLen ?? 6 }, (_, i) => 10 + i);
  return new Sequence(id, id, 0, tokens, tokens.length, 0, opts.salt ?? null, false, null, 0, lora > 0 ? adapter(lora) : null);
}

const loraIds = (plan: SchedulePlan) => new Set(plan.scheduled.flatMap((s) => (s.seq.lora ? [s.seq.lora.id] : [])));
const seqIds = (plan: SchedulePlan) => plan.scheduled.map((s) => s.seq.seqId);

/** Steps until every sequence has `length` tokens, finishing each as it gets there; returns the plans. */
function runToEnd(scheduler: Scheduler, all: Sequence[], length: number): SchedulePlan[] {
  const plans: SchedulePlan[] = [];
  for (let i = 0; i < 200 && scheduler.hasWork(); i++) {
    plans.push(stepScheduler(scheduler));
    scheduler.finishSequences(all.filter((s) => s.status === 'running' && s.numTokens >= length).map((s) => s.seqId));
  }
  return plans;
}

describe('Scheduler with LoRA adapters', () => {
  it('holds at most max_loras adapters per step over five adapters, and every sequence finishes', () => {
    const { scheduler } = makeScheduler(2);
    const all = Array.from({ length: 15 }, (_, i) => seq(`s${i}`, (i % 5) + 1));
    for (const s of all) scheduler.addSequence(s);
    const plans = runToEnd(scheduler, all, 10);
    expect(Math.max(...plans.map((p) => loraIds(p).size))).toBe(2);
    expect(all.every((s) => s.status === 'finished')).toBe(true);
    expect(new Set(plans.flatMap((p) => [...loraIds(p)]))).toEqual(new Set([1, 2, 3, 4, 5]));
  });

  it('skips a waiting sequence whose adapter would exceed max_loras, keeps its place, and lets base and held adapters join', () => {
    const { scheduler } = makeScheduler(1);
    const a = seq('a', 1);
    const b = seq('b', 2);
    const base = seq('base', 0);
    const a2 = seq('a2', 1);
    for (const s of [a, b, base, a2]) scheduler.addSequence(s);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['a', 'base', 'a2']);
    expect(b.status).toBe('waiting');
    expect(scheduler.numAdapterDeferred).toBe(1);
    // A later sequence of adapter 1 joins; b still waits at the head of the queue.
    const a3 = seq('a3', 1);
    scheduler.addSequence(a3);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['a', 'base', 'a2', 'a3']);
    scheduler.finishSequences(['a', 'a2', 'a3']);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['base', 'b']);
    expect(scheduler.numAdapterDeferred).toBe(0);
  });

  it('leaves a sequence waiting while its adapter is not loaded', () => {
    const loaded = new Set<number>();
    const asked: number[] = [];
    const { scheduler } = makeScheduler(4, (lora) => {
      asked.push(lora.id);
      return loaded.has(lora.id);
    });
    const a = seq('a', 1);
    const base = seq('base', 0);
    scheduler.addSequence(a);
    scheduler.addSequence(base);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['base']);
    expect(asked).toEqual([1]);
    loaded.add(1);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['base', 'a']);
  });

  it('a resumed sequence rejoins only when its adapter fits max_loras', () => {
    const { scheduler } = makeScheduler(1);
    const a = seq('a', 1);
    scheduler.addSequence(a);
    stepScheduler(scheduler);
    scheduler.pauseSequences(['a']);
    const b = seq('b', 2);
    scheduler.addSequence(b);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['b']);
    scheduler.resumeSequences(['a']);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['b']);
    expect(a.status).toBe('paused');
    scheduler.finishSequences(['b']);
    expect(seqIds(stepScheduler(scheduler))).toEqual(['a']);
  });

  it('names the adapters of running and waiting sequences, and the ids in use', () => {
    const { scheduler } = makeScheduler(1);
    for (const s of [seq('a', 1), seq('b', 2), seq('base', 0), seq('c', 3)]) scheduler.addSequence(s);
    stepScheduler(scheduler);
    expect(scheduler.adapterNames()).toEqual({ running: ['ad1'], waiting: ['ad2', 'ad3'] });
    expect(scheduler.adapterIdsInUse()).toEqual(new Set([1, 2, 3]));
  });
});

describe('prefix cache keyed by adapter', () => {
  const prompt = Array.from({ length: 13 }, (_, i) => 100 + i);

  /** Computes `s` fully, then returns the blocks another sequence of the same prompt would get from the cache. */
  function cachedThen(kv: KvCacheManager, first: Sequence, second: Sequence): number {
    kv.allocate(first, 0, first.numTokens);
    kv.cacheComputedBlocks(first, first.numTokens);
    return kv.findPrefixHit(second).blockIds.length;
  }

  const make = (id: string, lora: number, salt: string | null = null) => seq(id, lora, { tokens: prompt, salt });

  it('never serves a prefix computed under one adapter to another adapter or to the base model', () => {
    for (const [x, y] of [
      [1, 2],
      [1, 0],
      [0, 1],
    ]) {
      const kv = new KvCacheManager(64, 4, true);
      expect(cachedThen(kv, make('x', x), make('y', y))).toBe(0);
    }
  });

  it('serves it to the same adapter, and the cache salt composes with the adapter', () => {
    const kv = new KvCacheManager(64, 4, true);
    expect(cachedThen(kv, make('x', 1), make('y', 1))).toBe(3);
    expect(kv.findPrefixHit(make('z', 1, 'tenant')).blockIds).toEqual([]);
    const salted = new KvCacheManager(64, 4, true);
    expect(cachedThen(salted, make('x', 1, 'tenant'), make('y', 1, 'tenant'))).toBe(3);
    expect(salted.findPrefixHit(make('z', 2, 'tenant')).blockIds).toEqual([]);
    expect(salted.findPrefixHit(make('w', 0, 'tenant')).blockIds).toEqual([]);
  });
});
