// The scheduler's side of a decode request whose prompt KV is pulled (vLLM's
// WAITING_FOR_REMOTE_KVS): blocks for the whole prompt, no token budget while it waits, then only
// the last prompt token computed; a failed pull prefills in the same blocks; an abort frees them.
// And a producer's pinned blocks outlive their sequence until unpinned.

import { KvCacheManager } from '../../../../src/engine/core/kv-cache-manager';
import { Scheduler } from '../../../../src/engine/core/scheduler';
import { Sequence } from '../../../../src/engine/core/sequence';
import { promptHashes } from '../../../../src/engine/core/kv-transfer-agent';
import { stepScheduler } from '../../../helpers/scheduler-step';

const SOURCE = { engineId: 'p', requestId: 'r', host: '127.0.0.1', port: 1, blockIds: [] };

function setup() {
  const kv = new KvCacheManager(16, 4, true);
  const started: Array<[Sequence, number]> = [];
  const scheduler = new Scheduler({ maxNumSeqs: 4, maxNumBatchedTokens: 64, policy: 'fcfs', remoteKv: { start: (seq, local) => started.push([seq, local]) } }, kv);
  return { kv, scheduler, started };
}

function decodeSeq(id: string, promptLen: number, first = 10): Sequence {
  const seq = new Sequence(id, id, 0, Array.from({ length: promptLen }, (_, i) => first + i), promptLen, 0, null, false);
  seq.remotePrefill = { source: SOURCE, state: 'pending' };
  return seq;
}

/** A decode request of `promptLen` tokens, admitted and waiting for its pull. */
function awaiting(promptLen: number) {
  const made = setup();
  const seq = decodeSeq('d', promptLen);
  made.scheduler.addSequence(seq);
  stepScheduler(made.scheduler);
  return { ...made, seq };
}

describe('remote prefill in the scheduler', () => {
  it('waits with the prompt allocated, then computes only the last prompt token', () => {
    const { kv, scheduler, started } = setup();
    const seq = decodeSeq('d', 10);
    scheduler.addSequence(seq);
    const plan = stepScheduler(scheduler);
    expect(plan.scheduled).toEqual([]);
    expect(started).toEqual([[seq, 0]]);
    expect(kv.blockTable('d')).toHaveLength(3);
    expect(scheduler.numWaiting).toBe(1);
    expect(scheduler.numAwaitingKv).toBe(1);
    expect(scheduler.hasWork()).toBe(false);

    expect(scheduler.completeRemoteKv(seq, 10)).toBe(true);
    expect(seq.numComputedTokens).toBe(9);
    expect(seq.numCachedPromptTokens).toBe(9);
    const next = stepScheduler(scheduler);
    expect(next.scheduled.map((s) => [s.seq.seqId, s.numNewTokens, s.sample])).toEqual([['d', 1, true]]);
    expect(seq.tokenIds).toHaveLength(11);
    // The pulled full blocks entered the prefix cache: a second request with the prompt hits them.
    const again = new Sequence('again', 'again', 0, seq.tokenIds.slice(0, 10), 10, 0, null, false);
    expect(kv.findPrefixHit(again).numTokens).toBe(8);
  });

  it('pulls only what the local prefix cache lacks', () => {
    const { scheduler, started } = setup();
    const local = new Sequence('l', 'l', 0, Array.from({ length: 9 }, (_, i) => 10 + i), 9, 0, null, false);
    scheduler.addSequence(local);
    stepScheduler(scheduler);
    scheduler.finishSequences(['l']);
    const seq = decodeSeq('d', 14);
    scheduler.addSequence(seq);
    stepScheduler(scheduler);
    expect(started).toEqual([[seq, 8]]);
    expect(seq.numCachedPromptTokens).toBe(8);
  });

  it('prefills locally in the same blocks when the pull fails', () => {
    const { kv, scheduler, seq } = awaiting(10);
    const table = [...kv.blockTable('d')];
    scheduler.completeRemoteKv(seq, null);
    const plan = stepScheduler(scheduler);
    expect(plan.scheduled.map((s) => [s.seq.seqId, s.numNewTokens])).toEqual([['d', 10]]);
    expect(kv.blockTable('d').slice(0, 3)).toEqual(table);
    expect(seq.numCachedPromptTokens).toBe(0);
  });

  it('frees the blocks of a request aborted while it waits, and ignores its late pull', () => {
    const { kv, scheduler, seq } = awaiting(10);
    scheduler.finishSequences(['d']);
    expect(kv.numFreeBlocks).toBe(16);
    expect(scheduler.numWaiting).toBe(0);
    expect(scheduler.completeRemoteKv(seq, 10)).toBe(false);
    expect(stepScheduler(scheduler).scheduled).toEqual([]);
  });

  it('keeps a request waiting when the prompt does not fit, and others run meanwhile', () => {
    const { scheduler, started } = setup();
    const big = decodeSeq('big', 61);
    const small = new Sequence('s', 's', 0, [1, 2, 3], 3, 0, null, false);
    scheduler.addSequence(small);
    stepScheduler(scheduler);
    scheduler.addSequence(big);
    const plan = stepScheduler(scheduler);
    expect(plan.scheduled.map((s) => s.seq.seqId)).toEqual(['s']);
    expect(started).toEqual([]);
  });
});

describe('pinned blocks', () => {
  it('outlive their sequence until unpinned', () => {
    const kv = new KvCacheManager(8, 4, true);
    const seq = new Sequence('p', 'p', 0, [1, 2, 3, 4, 5, 6], 6, 0, null, false);
    kv.allocate(seq, 0, 6);
    const ids = [...kv.blockTable('p')];
    kv.pinBlocks(ids);
    kv.free('p');
    expect(kv.usage()).toBe(2 / 8);
    kv.unpinBlocks(ids);
    expect(kv.usage()).toBe(0);
  });

  it('hash a prompt the same for the same tokens, salt and adapter only', () => {
    const tokens = Array.from({ length: 10 }, (_, i) => i);
    const base = { tokenIds: tokens, numPromptTokens: 10, cacheSalt: null, loraKey: null };
    expect(promptHashes(base, 4)).toHaveLength(3);
    expect(promptHashes({ ...base, tokenIds: [...tokens, 99] }, 4)).toEqual(promptHashes(base, 4));
    expect(promptHashes({ ...base, cacheSalt: 's' }, 4)[0]).not.toEqual(promptHashes(base, 4)[0]);
    expect(promptHashes({ ...base, tokenIds: [...tokens.slice(0, 9), 42] }, 4)[2]).not.toEqual(promptHashes(base, 4)[2]);
  });
});
