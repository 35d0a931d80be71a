// The responses store backends: the same contract on the in-process LRU and on a real
// redis-server (conditional writes, copies, delete, TTL, writers racing), plus what only one
// backend has (byte-bounded LRU eviction; a Redis that is not there).

import { randomUUID } from 'node:crypto';
import { MemoryResponsesStore } from '../../../src/serving/responses/store/memory-store';
import { RedisResponsesStore } from '../../../src/serving/responses/store/redis-store';
import { ResponsesStoreError, STORE_RETRY_AFTER_SECONDS, StoreUnavailableError, type ResponsesStore, type StoredRecord } from '../../../src/serving/responses/store/responses-store';
import { needs } from '../../helpers/needs';
import { REDIS_SERVER, startRedis, type TestRedis } from '../../helpers/redis-server';

const LIVE = ['queued', 'in_progress'];

function record(id: string, status: string, text = 'hello'): StoredRecord {
  return { id, status, data: { id, status, output: [{ text }] } };
}

async function waitUntil(check: () => Promise<boolean>, what: string, deadlineMs = 15_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

type Factory = (ttlSeconds: number) => Promise<ResponsesStore>;

/** `secondWriter(store)` opens another writer on the same data (another replica's connection). */
function contract(name: string, factory: () => Factory, secondWriter: (store: ResponsesStore) => Promise<ResponsesStore>) {
  describe(`${name} store contract`, () => {
    let store: ResponsesStore;
    beforeEach(async () => {
      store = await factory()(0);
    });
    afterEach(() => store.close());

    it('returns what was put, as a copy', async () => {
      const id = `resp_${randomUUID()}`;
      expect(await store.put(record(id, 'completed', 'a story'))).toBe(true);
      const got = await store.get(id);
      expect(got).toMatchObject(record(id, 'completed', 'a story'));
      expect(got!.bytes).toBe(JSON.stringify(got!.data).length);
      (got!.data as { status: string }).status = 'mutated';
      expect(((await store.get(id))!.data as { status: string }).status).toBe('completed');
      expect(await store.status(id)).toBe('completed');
      expect(await store.get('resp_missing')).toBeNull();
      expect(await store.status('resp_missing')).toBeNull();
    });

    it('creates only once with the absent condition', async () => {
      const id = `resp_${randomUUID()}`;
      expect(await store.put(record(id, 'queued', 'first'), { absent: true })).toBe(true);
      expect(await store.put(record(id, 'queued', 'second'), { absent: true })).toBe(false);
      expect(await store.get(id)).toMatchObject(record(id, 'queued', 'first'));
    });

    it('updates only while the stored status is allowed', async () => {
      const id = `resp_${randomUUID()}`;
      expect(await store.put(record(id, 'in_progress'), { statusIn: LIVE })).toBe(false); // nothing stored yet
      await store.put(record(id, 'queued'), { absent: true });
      expect(await store.put(record(id, 'in_progress', 'partial'), { statusIn: LIVE })).toBe(true);
      expect(await store.put(record(id, 'cancelled', 'partial'), { statusIn: LIVE })).toBe(true);
      // The run finishing after the cancel must not resurrect the response.
      expect(await store.put(record(id, 'completed', 'full'), { statusIn: LIVE })).toBe(false);
      expect(await store.get(id)).toMatchObject(record(id, 'cancelled', 'partial'));
    });

    it('deletes', async () => {
      const id = `resp_${randomUUID()}`;
      await store.put(record(id, 'completed'));
      expect(await store.delete(id)).toBe(true);
      expect(await store.get(id)).toBeNull();
      expect(await store.delete(id)).toBe(false);
    });

    it('forgets a record after its TTL', async () => {
      const short = await factory()(0.3);
      try {
        const id = `resp_${randomUUID()}`;
        await short.put(record(id, 'completed'));
        expect(await short.status(id)).toBe('completed');
        await waitUntil(async () => (await short.get(id)) === null, 'the record to expire');
      } finally {
        await short.close();
      }
    });

    it('tells every writer when a response was stopped', async () => {
      const other = await secondWriter(store);
      try {
        const heard: string[] = [];
        await other.onStopped((id) => heard.push(id));
        await store.announceStopped('resp_stop_me');
        await waitUntil(async () => heard.includes('resp_stop_me'), 'the stop announcement');
      } finally {
        if (other !== store) await other.close();
      }
    });

    it('lets exactly one of many racing writers finish a live response', async () => {
      const other = await secondWriter(store);
      try {
        for (let round = 0; round < 5; round++) {
          const id = `resp_${randomUUID()}`;
          await store.put(record(id, 'in_progress'), { absent: true });
          // Half "finish" through this writer, half "cancel" through the other (another replica).
          const attempts = Array.from({ length: 16 }, (_, i) =>
            (i % 2 ? other : store).put(record(id, i % 2 ? 'cancelled' : 'completed', `writer ${i}`), { statusIn: LIVE }),
          );
          const results = await Promise.all(attempts);
          expect(results.filter(Boolean)).toHaveLength(1);
          const winner = results.indexOf(true);
          expect(await store.get(id)).toMatchObject(record(id, winner % 2 ? 'cancelled' : 'completed', `writer ${winner}`));
        }
        // Racing creates of one id: one wins.
        const id = `resp_${randomUUID()}`;
        const creates = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).put(record(id, 'queued', `c${i}`), { absent: true })));
        expect(creates.filter(Boolean)).toHaveLength(1);
      } finally {
        if (other !== store) await other.close();
      }
    });
  });
}

const BIG = 1 << 20;
contract(
  'memory',
  () => async (ttl) => new MemoryResponsesStore({ maxBytes: BIG, ttlSeconds: ttl }),
  // One process has one in-process store: the other writer is the same store.
  async (store) => store,
);

describe('memory store bounds', () => {
  it('evicts the least recently used records when over its byte budget', async () => {
    const size = JSON.stringify(record('resp_a', 'completed').data).length + 'resp_a'.length;
    const store = new MemoryResponsesStore({ maxBytes: size * 3, ttlSeconds: 0 });
    for (const id of ['resp_a', 'resp_b', 'resp_c']) await store.put(record(id, 'completed'));
    await store.get('resp_a'); // a is now the most recently used
    await store.put(record('resp_d', 'completed'));
    expect(await store.get('resp_b')).toBeNull();
    for (const id of ['resp_a', 'resp_c', 'resp_d']) expect(await store.status(id)).toBe('completed');
  });

  it('keeps records for the default 30-day TTL without a timer past setTimeout\'s limit', async () => {
    // Node fires a longer timer after 1 ms; re-armed on every firing, it would spin for ever.
    const timers = jest.spyOn(global, 'setTimeout');
    const store = new MemoryResponsesStore({ maxBytes: BIG, ttlSeconds: 2_592_000 });
    try {
      await store.put(record('resp_month', 'completed'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await store.status('resp_month')).toBe('completed');
      expect(timers.mock.calls.map(([, ms]) => ms ?? 0).filter((ms) => ms > 2 ** 31 - 1)).toEqual([]);
    } finally {
      timers.mockRestore();
      await store.close();
    }
  });

  it('refuses a record larger than the whole store', async () => {
    const store = new MemoryResponsesStore({ maxBytes: 64, ttlSeconds: 0 });
    await expect(store.put(record('resp_big', 'completed', 'x'.repeat(200)))).rejects.toThrow(ResponsesStoreError);
  });
});

const onRedis = needs(REDIS_SERVER);

onRedis.describe('redis store (real redis-server)', () => {
  let redis: TestRedis;
  const prefix = `test:${randomUUID()}:`;
  const open = async (ttl: number) => RedisResponsesStore.connect({ url: redis.url, ttlSeconds: ttl, timeoutMs: 2000, keyPrefix: prefix });

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());

  contract('redis', () => open, () => open(0));

  it('shares records between two connections (two replicas)', async () => {
    const [a, b] = [await open(0), await open(0)];
    try {
      await a.put(record('resp_shared', 'completed', 'from a'));
      expect(await b.get('resp_shared')).toMatchObject(record('resp_shared', 'completed', 'from a'));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('fails with a store error when Redis cannot be reached', async () => {
    await expect(RedisResponsesStore.connect({ url: 'redis://127.0.0.1:1/0', ttlSeconds: 0, timeoutMs: 2000 })).rejects.toThrow(
      /Cannot connect to the responses store at redis:\/\/127\.0\.0\.1:1\/0/,
    );
  });
});

onRedis.describe('redis store when the server goes away', () => {
  it('answers with a store error at once instead of queueing', async () => {
    const redis = await startRedis();
    const store = await RedisResponsesStore.connect({ url: redis.url, ttlSeconds: 0, timeoutMs: 2000 });
    try {
      await store.put(record('resp_x', 'completed'));
      await redis.stop();
      await expect(store.get('resp_x')).rejects.toThrow(StoreUnavailableError);
      expect(store.reachable).toBe(false);
    } finally {
      await store.close().catch(() => undefined);
    }
  });
});

onRedis.describe('redis store while the server is paused (SIGSTOP)', () => {
  it('fails each call within the timeout as unavailable, and recovers when it resumes', async () => {
    const redis = await startRedis();
    const store = await RedisResponsesStore.connect({ url: redis.url, ttlSeconds: 0, timeoutMs: 300 });
    try {
      await store.put(record('resp_p', 'completed'));
      redis.signal('SIGSTOP');
      const started = performance.now();
      const failure = await store.get('resp_p').catch((err: unknown) => err);
      const waited = performance.now() - started;
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect((failure as StoreUnavailableError).status).toBe(503);
      expect((failure as StoreUnavailableError).headers).toEqual({ 'retry-after': String(STORE_RETRY_AFTER_SECONDS) });
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(1500);
      expect(store.reachable).toBe(false);
      redis.signal('SIGCONT');
      expect(await store.get('resp_p')).toMatchObject(record('resp_p', 'completed'));
      expect(store.reachable).toBe(true);
    } finally {
      await store.close().catch(() => undefined);
      await redis.stop();
    }
  });
});
