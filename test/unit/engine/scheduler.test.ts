// Scheduler + KV manager driven by fake model outputs (no model): each step "samples"
// a fixed token for every sequence whose logits are due.

import { KvCacheManager } from '../../../src/engine/core/kv-cache-manager';
import { Scheduler, type SchedulePlan, type SchedulingPolicy } from '../../../src/engine/core/scheduler';
import { Sequence } from '../../../src/engine/core/sequence';
import { stepScheduler } from '../../helpers/scheduler-step';

function makeScheduler(opts: {
  numBlocks?: number;
  blockSize?: number;
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
  policy?: SchedulingPolicy;
  prefixCaching?: boolean;
}) {
  const kv = new KvCacheManager(opts.numBlocks ?? 64, opts.blockSize ?? 4, opts.prefixCaching ?? true);
  const scheduler = new Scheduler(
    { maxNumSeqs: opts.maxNumSeqs ?? 8, maxNumBatchedTokens: opts.maxNumBatchedTokens ?? 64, policy: opts.policy ?? 'fcfs' },
    kv,
  );
  return { kv, scheduler };
}

function seq(id: string, promptLen: number, opts: { priority?: number; salt?: string | null; firstToken?: number } = {}) {
  const first = opts.firstToken ?? 10;
  const tokens = Array.from({ length: promptLen }, (_, i) => first + i);
  return new Sequence(id, id, 0, tokens, promptLen, opts.priority ?? 0, opts.salt ?? null, false);
}

const step = stepScheduler;

const ids = (plan: SchedulePlan) => plan.scheduled.map((s) => `${s.seq.seqId}:${s.numNewTokens}`);

describe('Scheduler', () => {
  it('chunks long prompts under the per-step token budget and keeps decoding the others', () => {
    const { scheduler } = makeScheduler({ maxNumBatchedTokens: 8 });
    const short = seq('short', 3);
    scheduler.addSequence(short);
    expect(ids(step(scheduler))).toEqual(['short:3']);
    const long = seq('long', 20);
    scheduler.addSequence(long);
    // The running decode goes first; the long prompt gets what is left of the budget.
    expect(ids(step(scheduler))).toEqual(['short:1', 'long:7']);
    expect(ids(step(scheduler))).toEqual(['short:1', 'long:7']);
    const last = step(scheduler);
    expect(ids(last)).toEqual(['short:1', 'long:6']);
    expect(last.scheduled.map((s) => s.sample)).toEqual([true, true]);
    expect(long.numComputedTokens).toBe(20);
    expect(long.tokenIds).toHaveLength(21);
    for (const plan of [last]) expect(plan.numScheduledTokens).toBeLessThanOrEqual(8);
  });

  it('caps the running batch at max_num_seqs', () => {
    const { scheduler } = makeScheduler({ maxNumSeqs: 2 });
    for (const id of ['a', 'b', 'c']) scheduler.addSequence(seq(id, 2));
    expect(ids(step(scheduler))).toEqual(['a:2', 'b:2']);
    expect(scheduler.numWaiting).toBe(1);
    scheduler.finishSequences(['a']);
    expect(ids(step(scheduler))).toEqual(['b:1', 'c:2']);
  });

  it('preempts the newest running sequence when blocks run out, then recomputes it', () => {
    // 4 blocks of 2 tokens: two sequences of 3 prompt tokens need 2 blocks each.
    const { scheduler, kv } = makeScheduler({ numBlocks: 4, blockSize: 2, prefixCaching: false });
    const a = seq('a', 3);
    const b = seq('b', 3, { firstToken: 50 });
    scheduler.addSequence(a);
    scheduler.addSequence(b);
    expect(ids(step(scheduler))).toEqual(['a:3', 'b:3']);
    expect(kv.numFreeBlocks).toBe(0);
    // a needs a third block for its 5th token: b (newest) is preempted.
    step(scheduler); // a and b decode token 4 (fits in block 2)
    const plan = step(scheduler);
    expect(plan.preempted.map((s) => s.seqId)).toEqual(['b']);
    expect(ids(plan)).toEqual(['a:1']);
    expect(b.status).toBe('waiting');
    expect(b.numComputedTokens).toBe(0);
    expect(b.numPreemptions).toBe(1);
    scheduler.finishSequences(['a']);
    expect(kv.numFreeBlocks).toBe(4);
    // b comes back and recomputes prompt + the tokens it had generated.
    const again = step(scheduler);
    expect(ids(again)).toEqual([`b:${b.numTokens - 1}`]);
    expect(again.scheduled[0].sample).toBe(true);
  });

  it('preempts itself when it is the only running sequence left and cannot grow', () => {
    const { scheduler } = makeScheduler({ numBlocks: 2, blockSize: 2, prefixCaching: false });
    const a = seq('a', 4);
    scheduler.addSequence(a);
    step(scheduler);
    const plan = scheduler.schedule();
    expect(plan.preempted).toEqual([a]);
    expect(plan.scheduled).toEqual([]);
  });

  it('orders waiting and preemption by priority (lower first, then arrival)', () => {
    const { scheduler } = makeScheduler({ maxNumSeqs: 1, policy: 'priority' });
    scheduler.addSequence(seq('late-low', 2, { priority: 5 }));
    scheduler.addSequence(seq('high', 2, { priority: -1 }));
    scheduler.addSequence(seq('mid', 2, { priority: 0 }));
    scheduler.addSequence(seq('mid2', 2, { priority: 0 }));
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const plan = step(scheduler);
      order.push(plan.scheduled[0].seq.seqId);
      scheduler.finishSequences([plan.scheduled[0].seq.seqId]);
    }
    expect(order).toEqual(['high', 'mid', 'mid2', 'late-low']);
  });

  it('under priority policy preempts the lowest-priority running sequence', () => {
    const { scheduler } = makeScheduler({ numBlocks: 4, blockSize: 2, policy: 'priority', prefixCaching: false });
    const low = seq('low', 3, { priority: 9 });
    const high = seq('high', 3, { priority: 1, firstToken: 40 });
    scheduler.addSequence(low);
    scheduler.addSequence(high);
    step(scheduler);
    step(scheduler);
    const plan = step(scheduler);
    expect(plan.preempted.map((s) => s.seqId)).toEqual(['low']);
    expect(ids(plan)).toEqual(['high:1']);
  });

  it('frees all blocks of finished and waiting sequences', () => {
    const { scheduler, kv } = makeScheduler({ numBlocks: 16, blockSize: 4 });
    for (const id of ['a', 'b', 'c']) scheduler.addSequence(seq(id, 9, { firstToken: id.charCodeAt(0) }));
    step(scheduler);
    expect(kv.usage()).toBeGreaterThan(0);
    scheduler.finishSequences(['a', 'b', 'c']);
    expect(kv.usage()).toBe(0);
    expect(scheduler.hasWork()).toBe(false);
  });
});

describe('paused sequences (a client that stopped reading)', () => {
  it('leave the batch and the queue keeping their KV, and rejoin where they stopped once a slot is free', () => {
    const { scheduler, kv } = makeScheduler({ numBlocks: 16, blockSize: 4, prefixCaching: false, maxNumSeqs: 2 });
    const a = seq('a', 5);
    const b = seq('b', 5, { firstToken: 50 });
    const c = seq('c', 5, { firstToken: 90 });
    for (const s of [a, b, c]) scheduler.addSequence(s);
    step(scheduler);
    expect([scheduler.numRunning, scheduler.numWaiting]).toEqual([2, 1]);
    const used = kv.usage();
    scheduler.pauseSequences(['a', 'c']);
    expect([scheduler.numRunning, scheduler.numWaiting, scheduler.numPaused]).toEqual([1, 0, 2]);
    expect(kv.usage()).toBe(used);
    expect(a.numComputedTokens).toBe(5);
    // Only b runs while a and c are paused; pausing twice changes nothing.
    scheduler.pauseSequences(['a']);
    expect(ids(step(scheduler))).toEqual(['b:1']);
    expect(scheduler.hasWork()).toBe(true);
    scheduler.resumeSequences(['a']);
    expect([scheduler.numWaiting, scheduler.numPaused]).toEqual([1, 1]);
    // a decodes the token it had sampled before the pause on its kept K/V: nothing recomputed.
    expect(ids(step(scheduler))).toEqual(['b:1', 'a:1']);
    expect(a.numPreemptions).toBe(0);
    // c, paused before it ran (no KV), waits for a slot and then prefills.
    scheduler.resumeSequences(['c']);
    expect(ids(step(scheduler))).toEqual(['b:1', 'a:1']);
    expect(scheduler.numWaiting).toBe(1);
    scheduler.finishSequences(['b']);
    expect(ids(step(scheduler))).toEqual(['a:1', 'c:5']);
    scheduler.finishSequences(['a', 'c']);
    expect([scheduler.numRunning, scheduler.numWaiting, scheduler.numPaused, kv.usage()]).toEqual([0, 0, 0, 0]);
    expect(scheduler.hasWork()).toBe(false);
  });

  it('give up their KV before a running sequence is preempted, and recompute on resume', () => {
    // 4 blocks of 4 tokens: a and b hold 2 each; b's growth needs a's blocks.
    const { scheduler, kv } = makeScheduler({ numBlocks: 4, blockSize: 4, prefixCaching: false, maxNumSeqs: 2 });
    const a = seq('a', 7);
    const b = seq('b', 7, { firstToken: 50 });
    scheduler.addSequence(a);
    scheduler.addSequence(b);
    step(scheduler);
    scheduler.pauseSequences(['a']);
    expect(kv.usage()).toBe(1);
    step(scheduler);
    expect(a.numComputedTokens).toBe(7);
    // b's 9th token needs a third block: a's blocks go, nobody running is preempted.
    const plan = step(scheduler);
    expect(ids(plan)).toEqual(['b:1']);
    expect(plan.preempted).toEqual([]);
    expect(a.numComputedTokens).toBe(0);
    scheduler.finishSequences(['b']);
    scheduler.resumeSequences(['a']);
    expect(ids(step(scheduler))).toEqual(['a:8']);
  });

  it('a resumed sequence waiting for a slot gives up its KV too when blocks run short, then recomputes', () => {
    const { scheduler } = makeScheduler({ numBlocks: 4, blockSize: 4, prefixCaching: false, maxNumSeqs: 1 });
    const a = seq('a', 7);
    const b = seq('b', 7, { firstToken: 50 });
    scheduler.addSequence(a);
    step(scheduler);
    scheduler.pauseSequences(['a']);
    scheduler.addSequence(b);
    step(scheduler);
    scheduler.resumeSequences(['a']);
    // The batch (1 slot) is b's: a waits with its KV; b's growth (its 9th token) takes a's blocks
    // and a goes back to waiting.
    step(scheduler);
    expect([a.numComputedTokens, scheduler.numWaiting]).toEqual([7, 1]);
    expect(step(scheduler).preempted).toEqual([]);
    expect(a.numComputedTokens).toBe(0);
    expect([scheduler.numWaiting, scheduler.numPaused]).toEqual([1, 0]);
    scheduler.finishSequences(['b']);
    expect(ids(step(scheduler))).toEqual(['a:8']);
  });

  it('a scheduler holding only paused sequences has no work', () => {
    const { scheduler } = makeScheduler({});
    scheduler.addSequence(seq('a', 3));
    scheduler.pauseSequences(['a']);
    expect(scheduler.hasWork()).toBe(false);
    expect(step(scheduler).scheduled).toEqual([]);
  });
});

describe('prefix caching', () => {
  it('reuses full prompt blocks of an earlier request and counts queries and hits in tokens', () => {
    const { scheduler, kv } = makeScheduler({ blockSize: 4 });
    const first = seq('first', 10);
    scheduler.addSequence(first);
    const p1 = step(scheduler);
    expect(p1.prefixCacheQueries).toBe(10);
    expect(p1.prefixCacheHits).toBe(0);
    const firstBlocks = [...kv.blockTable('first')];
    scheduler.finishSequences(['first']);

    const second = seq('second', 10);
    scheduler.addSequence(second);
    const p2 = step(scheduler);
    expect(p2.prefixCacheQueries).toBe(10);
    expect(p2.prefixCacheHits).toBe(8);
    expect(ids(p2)).toEqual(['second:2']);
    expect(second.numCachedPromptTokens).toBe(8);
    expect(kv.blockTable('second').slice(0, 2)).toEqual(firstBlocks.slice(0, 2));
  });

  it('always leaves one token to compute when the whole prompt is cached', () => {
    const { scheduler } = makeScheduler({ blockSize: 4 });
    scheduler.addSequence(seq('a', 8));
    step(scheduler);
    step(scheduler); // token 9 computed: blocks 0-1 full and cached
    const b = seq('b', 8);
    scheduler.addSequence(b);
    const plan = step(scheduler);
    expect(plan.prefixCacheHits).toBe(4);
    expect(ids(plan)).toEqual(['a:1', 'b:4']);
  });

  it('never shares blocks between different cache salts', () => {
    const { scheduler } = makeScheduler({ blockSize: 4 });
    scheduler.addSequence(seq('a', 9, { salt: 'alice' }));
    step(scheduler);
    scheduler.addSequence(seq('b', 9, { salt: 'bob' }));
    expect(step(scheduler).prefixCacheHits).toBe(0);
    scheduler.addSequence(seq('c', 9, { salt: 'alice' }));
    expect(step(scheduler).prefixCacheHits).toBe(8);
    scheduler.addSequence(seq('d', 9));
    expect(step(scheduler).prefixCacheHits).toBe(0);
  });

  it('misses after a different token and after LRU eviction of free cached blocks', () => {
    const { scheduler, kv } = makeScheduler({ numBlocks: 4, blockSize: 4 });
    scheduler.addSequence(seq('a', 9));
    step(scheduler);
    scheduler.finishSequences(['a']);
    const changed = seq('changed', 9);
    changed.tokenIds[5] = 999; // second block differs
    scheduler.addSequence(changed);
    expect(step(scheduler).prefixCacheHits).toBe(4);
    scheduler.finishSequences(['changed']);
    // A request with other tokens takes every block, evicting the cached ones.
    scheduler.addSequence(seq('other', 16, { firstToken: 300 }));
    step(scheduler);
    scheduler.finishSequences(['other']);
    expect(kv.usage()).toBe(0);
    scheduler.addSequence(seq('again', 9));
    expect(step(scheduler).prefixCacheHits).toBe(0);
  });

  it('does not look up the cache for sequences that skip it (prompt logprobs)', () => {
    const { scheduler } = makeScheduler({ blockSize: 4 });
    scheduler.addSequence(seq('a', 9));
    step(scheduler);
    const b = new Sequence('b', 'b', 0, seq('x', 9).tokenIds, 9, 0, null, true);
    scheduler.addSequence(b);
    const plan = step(scheduler);
    expect(plan.prefixCacheQueries).toBe(0);
    expect(ids(plan)).toEqual(['a:1', 'b:9']);
  });
});

describe('forked sequences (n > 1)', () => {
  it('share full prompt blocks, copy the partial one, and free everything at the end', () => {
    const { scheduler, kv } = makeScheduler({ numBlocks: 16, blockSize: 4 });
    const parent = seq('r#0', 6);
    scheduler.addSequence(parent);
    step(scheduler);
    const child = new Sequence('r#1', 'r', 1, [...parent.tokenIds.slice(0, 6), 8], 6, 0, null, false);
    const copies = scheduler.addForkedSequence(parent, child, 6);
    const pt = kv.blockTable('r#0');
    const ct = kv.blockTable('r#1');
    expect(ct[0]).toBe(pt[0]);
    expect(ct[1]).not.toBe(pt[1]);
    expect(copies).toEqual([[pt[1], ct[1]]]);
    expect(ids(step(scheduler))).toEqual(['r#0:1', 'r#1:1']);
    scheduler.finishSequences(['r#0']);
    expect(kv.usage()).toBeGreaterThan(0);
    scheduler.finishSequences(['r#1']);
    expect(kv.usage()).toBe(0);
  });

  it('a child that does not fit the batch waits and recomputes', () => {
    const { scheduler } = makeScheduler({ maxNumSeqs: 1, blockSize: 4 });
    const parent = seq('r#0', 6);
    scheduler.addSequence(parent);
    step(scheduler);
    const child = new Sequence('r#1', 'r', 1, [...parent.tokenIds.slice(0, 6), 8], 6, 0, null, false);
    expect(scheduler.addForkedSequence(parent, child, 6)).toEqual([]);
    expect(child.status).toBe('waiting');
    expect(scheduler.numWaiting).toBe(1);
  });
});

describe('KvCacheManager eviction', () => {
  const kvSeq = (seqId: string, first: number, len: number, salt: string | null = null) => ({
    seqId,
    tokenIds: Array.from({ length: len }, (_, i) => first + i),
    cacheSalt: salt,
    numEncoderPositions: 0,
  });

  it('evicts the least recently freed cached blocks first and keeps the recent prefix', () => {
    const kv = new KvCacheManager(6, 2, true);
    const old = kvSeq('old', 100, 5);
    const recent = kvSeq('recent', 200, 5);
    for (const s of [old, recent]) {
      expect(kv.allocate(s, 0, 5)).toBe(true);
      kv.cacheComputedBlocks(s, 5);
    }
    kv.free('old');
    kv.free('recent');
    expect(kv.usage()).toBe(0);
    // Needs 3 blocks: the 2 uncached partial blocks go first, then the oldest cached one.
    const other = kvSeq('other', 300, 6);
    expect(kv.allocate(other, 0, 6)).toBe(true);
    expect(kv.findPrefixHit(kvSeq('x', 200, 5)).numTokens).toBe(4);
    expect(kv.findPrefixHit(kvSeq('y', 100, 5)).numTokens).toBe(2);
  });

  it('refuses an allocation it cannot satisfy without changing anything', () => {
    const kv = new KvCacheManager(2, 4, false);
    const a = kvSeq('a', 1, 8);
    expect(kv.allocate(a, 0, 9)).toBe(false);
    expect(kv.numFreeBlocks).toBe(2);
    expect(kv.blockTable('a')).toEqual([]);
  });
});

describe('KvCacheManager encoder blocks (encoder-decoder sequences)', () => {
  const encSeq = (seqId: string, len: number) => ({ seqId, tokenIds: Array.from({ length: len }, (_, i) => i), cacheSalt: null, numEncoderPositions: 10 });

  it('takes the encoder blocks with the first decoder blocks, all or nothing, and frees them together', () => {
    const kv = new KvCacheManager(6, 4, true);
    expect(kv.allocate(encSeq('a', 4), 0, 4)).toBe(true); // 3 encoder blocks + 1 decoder block
    expect(kv.encoderBlockTable('a')).toHaveLength(3);
    expect(kv.blockTable('a')).toHaveLength(1);
    expect(kv.allocate(encSeq('b', 8), 0, 8)).toBe(false); // needs 3 + 2 > 2 free
    expect(kv.encoderBlockTable('b')).toEqual([]);
    expect(kv.allocate(encSeq('a', 5), 4, 1)).toBe(true); // growing takes no new encoder blocks
    expect(kv.encoderBlockTable('a')).toHaveLength(3);
    expect(kv.numFreeBlocks).toBe(1);
    kv.free('a');
    expect(kv.numFreeBlocks).toBe(6);
  });

  it('never prefix-caches their decoder blocks (they depend on the audio)', () => {
    const kv = new KvCacheManager(12, 4, true);
    const a = encSeq('a', 9);
    expect(kv.allocate(a, 0, 9)).toBe(true);
    kv.cacheComputedBlocks(a, 9);
    expect(kv.findPrefixHit(encSeq('b', 9)).numTokens).toBe(0);
    expect(kv.findPrefixHit({ ...encSeq('c', 9), numEncoderPositions: 0 }).numTokens).toBe(0);
  });

  it('lets an n > 1 child share the parent\'s encoder blocks until both are freed', () => {
    const kv = new KvCacheManager(8, 4, false);
    expect(kv.allocate(encSeq('p', 4), 0, 4)).toBe(true);
    expect(kv.fork('p', 'c', 4)).toEqual([]);
    expect(kv.encoderBlockTable('c')).toEqual(kv.encoderBlockTable('p'));
    kv.free('p');
    expect(kv.numFreeBlocks).toBe(4); // the shared blocks stay with the child
    kv.free('c');
    expect(kv.numFreeBlocks).toBe(8);
  });
});
