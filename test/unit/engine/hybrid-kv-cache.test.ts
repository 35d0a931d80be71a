// Block accounting over a full-attention pool and a sliding-window pool (no model): the sliding
// pool holds only the window, allocations are all or nothing across pools, prefix hits need the
// window's blocks, and the scheduler preempts and frees across both pools.

import { HybridKvCacheManager } from '../../../src/engine/core/hybrid-kv-cache';
import { RELEASED } from '../../../src/engine/core/kv-cache-manager';
import { Scheduler } from '../../../src/engine/core/scheduler';
import { Sequence } from '../../../src/engine/core/sequence';
import { stepScheduler } from '../../helpers/scheduler-step';
import { windowBlocksPerSequence } from '../../../src/model/runner/kv-pools';

const BS = 4;
const WINDOW = 6;

function manager(fullBlocks: number, slidingBlocks: number, prefixCaching = true): HybridKvCacheManager {
  return new HybridKvCacheManager(
    [
      { numBlocks: fullBlocks, window: 0, numLayers: 1 },
      { numBlocks: slidingBlocks, window: WINDOW, numLayers: 5 },
    ],
    BS,
    prefixCaching,
  );
}

function seq(id: string, tokens: number[]): Sequence {
  return new Sequence(id, id, 0, tokens, tokens.length, 0, null, false);
}

const range = (n: number, first = 10) => Array.from({ length: n }, (_, i) => first + i);
/** Blocks held by sequences, per pool. */
const held = (m: HybridKvCacheManager) => m.pools.map((p) => p.numBlocks - p.numFreeBlocks);

describe('HybridKvCacheManager', () => {
  it('keeps only the window in the sliding pool while the full pool grows with the sequence', () => {
    const m = manager(64, 8);
    const s = seq('a', range(40));
    for (let c = 0; c < 40; c++) {
      expect(m.allocate(s, c, 1)).toBe(true);
      m.cacheComputedBlocks(s, c + 1);
      const [full, sliding] = m.blockTables('a');
      expect(full).toHaveLength(Math.ceil((c + 1) / BS));
      expect(sliding).toHaveLength(full.length);
      // Blocks wholly behind the window of position c are released; the rest are held.
      const behind = Math.floor(Math.max(0, c - WINDOW + 1) / BS);
      expect(sliding.slice(0, behind).every((id) => id === RELEASED)).toBe(true);
      expect(sliding.slice(behind).every((id) => id >= 0)).toBe(true);
      expect(held(m)).toEqual([full.length, full.length - behind]);
      expect(held(m)[1]).toBeLessThanOrEqual(windowBlocksPerSequence(WINDOW, BS, 1));
    }
    m.free('a');
    expect(held(m)).toEqual([0, 0]);
  });

  it('a long prefill chunk holds its blocks until the next step releases those behind the window', () => {
    const m = manager(64, 12);
    const s = seq('a', range(41));
    expect(m.allocate(s, 0, 40)).toBe(true);
    expect(held(m)).toEqual([10, 10]);
    expect(m.allocate(s, 40, 1)).toBe(true);
    // Position 40 reads from 35 on: blocks 8 (32..35) and 9, plus block 10 for the new token.
    expect(held(m)).toEqual([11, 3]);
    expect(m.blockTables('a')[1].slice(0, 8).every((id) => id === RELEASED)).toBe(true);
  });

  it('allocates in every pool or in none', () => {
    const m = manager(64, 3);
    expect(m.allocate(seq('a', range(8)), 0, 8)).toBe(true);
    expect(held(m)).toEqual([2, 2]);
    // The sliding pool has one block left; the full pool has plenty, and must not lend any.
    expect(m.allocate(seq('b', range(8)), 0, 8)).toBe(false);
    expect(held(m)).toEqual([2, 2]);
    expect(m.blockTables('b')).toEqual([[], []]);
  });

  it('serves a prefix hit whose window is cached, and none where released sliding blocks were reused', () => {
    const m = manager(64, 4);
    const a = seq('a', range(17));
    expect(m.allocate(a, 0, 16)).toBe(true);
    m.cacheComputedBlocks(a, 16);
    // Decoding position 16 releases sliding blocks 0 and 1 (cached) and takes one of them back
    // for block 4: the first released one (logical block 0) is evicted from the cache.
    expect(m.allocate(a, 16, 1)).toBe(true);
    m.cacheComputedBlocks(a, 17);
    m.free('a');

    // Position 16's window (11..16) needs blocks 2 and 3 only: a hit of 16 tokens, blocks 0-1 released.
    const longHit = m.findPrefixHit(seq('b', [...range(16), 99]));
    expect(longHit.numTokens).toBe(16);
    const b = seq('b', [...range(16), 99]);
    expect(m.allocate(b, longHit.numTokens, 1, longHit)).toBe(true);
    const [full, sliding] = m.blockTables('b');
    expect(full).toHaveLength(5);
    expect(sliding.slice(0, 2)).toEqual([RELEASED, RELEASED]);
    expect(sliding.slice(2).every((id) => id >= 0)).toBe(true);
    m.free('b');

    // Position 8's window (3..8) needs blocks 0 and 1: block 0 was reused, so no hit, though the full pool has both blocks.
    expect(m.pools[0].findPrefixHit(seq('c', [...range(8), 99])).numTokens).toBe(8);
    expect(m.findPrefixHit(seq('c', [...range(8), 99])).numTokens).toBe(0);
  });

  it('forks in both pools, copying each pool\'s partial block', () => {
    const m = manager(64, 8);
    const parent = seq('p', range(10));
    expect(m.allocate(parent, 0, 10)).toBe(true);
    const copies = m.fork('p', 'c', 10)!;
    expect(copies.map((c) => c[2])).toEqual([0, 1]);
    const [pf, ps] = m.blockTables('p');
    const [cf, cs] = m.blockTables('c');
    expect(cf.slice(0, 2)).toEqual(pf.slice(0, 2));
    expect(cs.slice(0, 2)).toEqual(ps.slice(0, 2));
    expect([cf[2], cs[2]]).toEqual([copies[0][1], copies[1][1]]);
    expect(held(m)).toEqual([4, 4]);
  });

  it('reports usage as the share of KV memory held: blocks weighted by the layers they span', () => {
    const m = manager(10, 10);
    expect(m.allocate(seq('a', range(8)), 0, 8)).toBe(true);
    expect(held(m)).toEqual([2, 2]);
    expect(m.usage()).toBeCloseTo((2 * 1 + 2 * 5) / (10 * 1 + 10 * 5), 12);
  });
});

const step = stepScheduler;

describe('Scheduler over hybrid KV pools', () => {
  it('runs long sequences in a small sliding pool, preempting when it runs short, and frees both pools', () => {
    // Three sequences need at most 3 sliding blocks each while decoding: 7 blocks hold two of them.
    const m = manager(64, 7, false);
    const scheduler = new Scheduler({ maxNumSeqs: 4, maxNumBatchedTokens: 16, policy: 'fcfs' }, m);
    const seqs = ['a', 'b', 'c'].map((id, i) => seq(id, range(10, 100 * i)));
    for (const s of seqs) scheduler.addSequence(s);
    let preemptions = 0;
    for (let i = 0; i < 400 && seqs.some((s) => s.numTokens < 60); i++) {
      const plan = step(scheduler);
      preemptions += plan.preempted.length;
      expect(held(m)[1]).toBeLessThanOrEqual(7);
      for (const s of seqs.filter((x) => x.numTokens >= 60 && x.status !== 'finished')) scheduler.finishSequences([s.seqId]);
    }
    expect(seqs.every((s) => s.numTokens >= 60)).toBe(true);
    expect(preemptions).toBeGreaterThan(0);
    expect(held(m)).toEqual([0, 0]);
  });

  it('an aborted sequence gives back its blocks in both pools at once', () => {
    const m = manager(64, 16);
    const scheduler = new Scheduler({ maxNumSeqs: 4, maxNumBatchedTokens: 64, policy: 'fcfs' }, m);
    const a = seq('a', range(30));
    const b = seq('b', range(12, 500));
    scheduler.addSequence(a);
    scheduler.addSequence(b);
    for (let i = 0; i < 5; i++) step(scheduler);
    const before = held(m);
    scheduler.finishSequences(['a']);
    expect(m.blockTables('a')).toEqual([[], []]);
    const after = held(m);
    expect(after[0]).toBe(before[0] - Math.ceil(a.numComputedTokens / BS));
    expect(after[1]).toBeLessThan(before[1]);
    scheduler.finishSequences(['b']);
    expect(held(m)).toEqual([0, 0]);
  });
});
