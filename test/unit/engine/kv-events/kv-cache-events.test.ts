// The prefix cache's events as a subscriber sees them: a view built only from the decoded
// batches (stores add hashes, removals drop them, a clear empties it) equals what the manager
// has cached, through inserts, shared prefixes, evictions, windowed pools and resets.

import { decode } from '@msgpack/msgpack';
import { HybridKvCacheManager } from '../../../../src/engine/core/hybrid-kv-cache';
import { KvCacheManager, type KvSequence } from '../../../../src/engine/core/kv-cache-manager';
import { cachedBlocksOf } from '../../../../src/engine/kv-events/kv-event-groups';
import { KvEventRecorder } from '../../../../src/engine/kv-events/kv-event-recorder';
import { encodeKvEventBatch } from '../../../../src/engine/kv-events/kv-event-wire';

const BLOCK = 4;

/** Follows decoded batches: per group, the set of hashes (decimal strings) and what each store said. */
class Subscriber {
  readonly groups = new Map<number, Set<string>>();
  readonly stores: unknown[][] = [];

  apply(bytes: Buffer): void {
    const [, events, rank] = decode(bytes, { useBigInt64: true }) as [number, unknown[][], number];
    expect(rank).toBe(0);
    for (const event of events) {
      const group = (i: number) => {
        const g = Number(event[i]);
        if (!this.groups.has(g)) this.groups.set(g, new Set());
        return this.groups.get(g)!;
      };
      if (event[0] === 'BlockStored') {
        this.stores.push(event);
        for (const h of event[1] as bigint[]) group(9).add(String(h));
      } else if (event[0] === 'BlockRemoved') {
        for (const h of event[1] as bigint[]) expect(group(3).delete(String(h))).toBe(true);
      } else {
        expect(event).toEqual(['AllBlocksCleared']);
        this.groups.clear();
      }
    }
  }

  view(): Array<{ group_idx: number; block_hashes: string[] }> {
    return [...this.groups].filter(([, set]) => set.size > 0).map(([g, set]) => ({ group_idx: g, block_hashes: [...set].sort() }));
  }
}

function seqOf(seqId: string, tokenIds: number[], lora: { id: number; name: string } | null = null): KvSequence {
  return { seqId, tokenIds, cacheSalt: null, numEncoderPositions: 0, loraKey: lora ? `${lora.name}@${lora.id}` : null, lora };
}

/** Allocates and computes the whole sequence in one step, then frees it (its blocks stay cached). */
function run(kv: KvCacheManager | HybridKvCacheManager, seq: KvSequence): void {
  const hit = kv.findPrefixHit(seq);
  expect(kv.allocate(seq, hit.numTokens, seq.tokenIds.length - hit.numTokens, hit)).toBe(true);
  kv.cacheComputedBlocks(seq, seq.tokenIds.length);
  kv.free(seq.seqId);
}

function cachedView(kv: KvCacheManager | HybridKvCacheManager) {
  return cachedBlocksOf(kv)
    .groups.filter((g) => g.block_hashes.length > 0)
    .map((g) => ({ group_idx: g.group_idx, block_hashes: [...g.block_hashes].sort() }));
}

function attach(kv: KvCacheManager | HybridKvCacheManager): KvEventRecorder {
  const recorder = new KvEventRecorder();
  const pools = kv instanceof HybridKvCacheManager ? kv.pools : [kv];
  pools.forEach((pool, groupIdx) => (pool.events = recorder.sinkFor({ groupIdx, blockSize: BLOCK, window: pool.window })));
  return recorder;
}

function flush(recorder: KvEventRecorder, sub: Subscriber): void {
  const batch = recorder.take();
  if (batch) sub.apply(encodeKvEventBatch(batch));
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe('KV cache events from the KV manager', () => {
  it('announces stored blocks chained on their parent, skips the cached prefix, and removes evicted ones', () => {
    const kv = new KvCacheManager(6, BLOCK, true);
    const recorder = attach(kv);
    const sub = new Subscriber();

    run(kv, seqOf('a', range(0, 9))); // 2 full blocks
    flush(recorder, sub);
    expect(sub.stores).toHaveLength(1);
    const [first] = sub.stores;
    expect(first.slice(0, 8)).toEqual(['BlockStored', expect.any(Array), null, range(0, 8), BLOCK, null, 'GPU', null]);
    expect(first.slice(9)).toEqual([0, 'full_attention']);
    expect(sub.view()).toEqual(cachedView(kv));

    // Same first 8 tokens: the hit's blocks are not announced again; the new block's parent is the hit's last.
    run(kv, seqOf('b', [...range(0, 8), ...range(100, 5)]));
    flush(recorder, sub);
    const second = sub.stores[1];
    expect(second[3]).toEqual(range(100, 4));
    expect(second[2]).toBe((first[1] as bigint[])[1]);
    expect(sub.view()).toEqual(cachedView(kv));

    // A long new prompt takes every free block: cached ones are evicted and announced removed.
    run(kv, seqOf('c', range(500, 21)));
    flush(recorder, sub);
    expect(sub.view()).toEqual(cachedView(kv));
    expect(cachedView(kv)[0].block_hashes).toHaveLength(5);

    kv.resetPrefixCache();
    flush(recorder, sub);
    expect(sub.view()).toEqual([]);
    expect(cachedView(kv)).toEqual([]);
  });

  it('announces a block computed twice in one step once, and names the adapter', () => {
    const kv = new KvCacheManager(16, BLOCK, true);
    const recorder = attach(kv);
    const sub = new Subscriber();
    const sql = { id: 7, name: 'sql' };
    const x = seqOf('x', range(0, 12), sql);
    const y = seqOf('y', range(0, 12), sql);
    for (const s of [x, y]) expect(kv.allocate(s, 0, 12)).toBe(true);
    kv.cacheComputedBlocks(x, 12);
    kv.cacheComputedBlocks(y, 12); // the same blocks: already cached, so nothing new to announce
    flush(recorder, sub);
    expect(sub.stores).toHaveLength(1);
    expect(sub.stores[0][5]).toBe(7);
    expect(sub.stores[0][7]).toBe('sql');
    expect(sub.view()).toEqual(cachedView(kv));
    // An unrelated adapter-less prompt with the same tokens is another prefix (another hash).
    run(kv, seqOf('z', range(0, 12)));
    flush(recorder, sub);
    expect(sub.view()[0].block_hashes).toHaveLength(6);
    expect(sub.view()).toEqual(cachedView(kv));
  });

  it('reports each pool of a hybrid manager as its own group, and one clear for all', () => {
    const kv = new HybridKvCacheManager(
      [
        { numBlocks: 12, window: 0, numLayers: 1 },
        { numBlocks: 6, window: 8, numLayers: 1 },
      ],
      BLOCK,
      true,
    );
    const recorder = attach(kv);
    const sub = new Subscriber();
    for (let i = 0; i < 4; i++) {
      run(kv, seqOf(`s${i}`, range(i * 1000, 14)));
      flush(recorder, sub);
      expect(sub.view()).toEqual(cachedView(kv));
    }
    const windowed = sub.stores.filter((e) => e[9] === 1);
    expect(windowed.length).toBeGreaterThan(0);
    expect(windowed[0].slice(10)).toEqual(['sliding_window', 8]);
    kv.resetPrefixCache();
    const batch = recorder.take()!;
    expect(batch.events).toEqual([{ type: 'AllBlocksCleared' }]);
  });

  it('costs nothing without a sink: no events, the same cache', () => {
    const kv = new KvCacheManager(6, BLOCK, true);
    run(kv, seqOf('a', range(0, 9)));
    expect(kv.events).toBeNull();
    expect(kv.cachedBlockHashes()).toHaveLength(2);
  });
});
