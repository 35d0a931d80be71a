// The engine core's adapter store on its own (no model): --max-cpu-loras as an LRU that loads
// the new adapter before dropping an idle one, failed reads, load_lora_adapter when every held
// adapter is in use, and unload of an adapter still in use.

import { LoraAdapterStore } from '../../../src/engine/core/lora-adapters';
import { LoraLoadError, type LoraWeights } from '../../../src/model/lora/lora-weights';
import type { LoraRequest } from '../../../src/engine/types';
import { fakeArch } from '../../helpers/fake-engine';

const adapter = (id: number): LoraRequest => ({ name: `ad${id}`, id, path: id === 9 ? '/missing' : `/adapters/${id}` });
const weights = (rank: number): LoraWeights => ({ rank, alpha: rank + 1, scaling: (rank + 1) / rank, layers: [], bytes: 0 });

function setup(maxCpuLoras: number) {
  const events: string[] = [];
  const inUse = new Set<number>();
  const failures: string[] = [];
  let loaded = 0;
  const store = new LoraAdapterStore(
    { maxLoras: 1, maxRank: 16, maxCpuLoras, dtype: 'auto' },
    fakeArch(),
    { maxLoras: 1, add: (id) => events.push(`add ${id}`), remove: (id) => events.push(`remove ${id}`) },
    (path) => (path === '/missing' ? Promise.reject(new LoraLoadError(`No adapter found for ${path}`)) : Promise.resolve(weights(8))),
    { inUse: () => inUse, loaded: () => loaded++, failed: (id, message) => failures.push(`${id}: ${message}`) },
  );
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { store, events, inUse, failures, settle, loadedCount: () => loaded };
}

describe('LoraAdapterStore', () => {
  it('loads on demand, and drops the least recently used idle adapter only once the new one has loaded', async () => {
    const { store, events, inUse, settle, loadedCount } = setup(2);
    expect(store.ready(adapter(1))).toBe(false);
    expect(store.loading).toBe(true);
    await settle();
    expect(store.ready(adapter(1))).toBe(true);
    expect(store.ready(adapter(2))).toBe(false);
    await settle();
    expect(store.ready(adapter(2))).toBe(true);
    expect(store.ready(adapter(1))).toBe(true); // 1 is now the more recently used
    inUse.add(3);
    expect(store.ready(adapter(3))).toBe(false);
    await settle();
    expect(events).toEqual(['add 1', 'add 2', 'add 3', 'remove 2']);
    expect(store.loadedIds().sort()).toEqual([1, 3]);
    expect(loadedCount()).toBe(3);
  });

  it('waits when every held adapter is in use, and a failed read drops nothing', async () => {
    const { store, events, inUse, failures, settle } = setup(1);
    inUse.add(1);
    store.ready(adapter(1));
    await settle();
    inUse.add(2);
    expect(store.ready(adapter(2))).toBe(false);
    expect(store.loading).toBe(false);
    inUse.delete(1);
    store.ready(adapter(9));
    await settle();
    expect(failures).toEqual(['9: LoRA adapter \'ad9\' could not be loaded from /missing: No adapter found for /missing']);
    expect(events).toEqual(['add 1']);
  });

  it('load_lora_adapter rejects with the loader’s message, and checks but does not keep an adapter when all held ones are in use', async () => {
    const { store, events, inUse } = setup(1);
    await expect(store.add(adapter(9))).rejects.toThrow('No adapter found for /missing');
    await store.add(adapter(1));
    inUse.add(1);
    await store.add(adapter(2));
    expect(events).toEqual(['add 1']);
    expect(store.loadedIds()).toEqual([1]);
  });

  it('unloading an adapter in use drops it once no request names it', async () => {
    const { store, events, inUse } = setup(2);
    await store.add(adapter(1));
    inUse.add(1);
    store.remove(1);
    expect(events).toEqual(['add 1']);
    store.dropUnused();
    expect(events).toEqual(['add 1']);
    inUse.delete(1);
    store.dropUnused();
    expect(events).toEqual(['add 1', 'remove 1']);
    store.remove(42);
  });

  it('refuses max_cpu_loras below max_loras as vLLM does', () => {
    expect(
      () =>
        new LoraAdapterStore({ maxLoras: 2, maxRank: 8, maxCpuLoras: 1, dtype: 'auto' }, fakeArch(), null, () => Promise.resolve(weights(8)), {
          inUse: () => new Set(),
          loaded: () => {},
          failed: () => {},
        }),
    ).toThrow('max_cpu_loras (1) must be >= max_loras (2)');
  });
});
