// The encoder cache: least recently used out first, bounded in bytes, counting lookups and hits.
import { EncoderCache } from '../../../src/engine/core/encoder-cache';

const rows = (floats: number, value: number) => new Float32Array(floats).fill(value);

describe('EncoderCache', () => {
  it('evicts the least recently used entries to stay within its bytes, a hit making an entry recent', () => {
    const cache = new EncoderCache(3 * 16);
    cache.put('a', rows(4, 1));
    cache.put('b', rows(4, 2));
    cache.put('c', rows(4, 3));
    expect(cache.get('a')?.[0]).toBe(1);
    cache.put('d', rows(4, 4));
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a')?.[0], cache.get('c')?.[0], cache.get('d')?.[0]]).toEqual([1, 3, 4]);
    expect(cache.usedBytes).toBe(48);
    cache.put('e', rows(8, 5));
    expect(cache.usedBytes).toBeLessThanOrEqual(48);
    expect(cache.get('e')?.[0]).toBe(5);
    expect(cache.get('a')).toBeUndefined();
  });

  it('does not keep rows larger than the whole cache, nor anything at capacity 0', () => {
    const cache = new EncoderCache(16);
    cache.put('big', rows(5, 1));
    expect(cache.size).toBe(0);
    const none = new EncoderCache(0);
    none.put('a', rows(1, 1));
    expect(none.get('a')).toBeUndefined();
  });

  it('reports lookups and hits since the last drain', () => {
    const cache = new EncoderCache(64);
    expect(cache.drainStats()).toBeNull();
    cache.put('a', rows(2, 1));
    expect([cache.query('a'), cache.query('b'), cache.query('a')]).toEqual([true, false, true]);
    cache.get('a');
    expect(cache.drainStats()).toEqual({ queries: 3, hits: 2 });
    expect(cache.drainStats()).toBeNull();
  });
});
