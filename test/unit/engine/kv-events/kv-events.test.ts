// Starting KV events in the engine core: nothing without enable_kv_cache_events (vLLM's warnings
// when the config half-asks for events), a sink on every KV group otherwise, one batch per flush.

import { freePort } from '../../../helpers/free-port';
import { Subscriber } from 'zeromq';
import { decode } from '@msgpack/msgpack';
import { HybridKvCacheManager } from '../../../../src/engine/core/hybrid-kv-cache';
import { KvCacheManager } from '../../../../src/engine/core/kv-cache-manager';
import { parseKvEventsConfig } from '../../../../src/engine/kv-events/kv-events-config';
import { KvEvents } from '../../../../src/engine/kv-events/kv-events';


describe('KvEvents', () => {
  let warn: jest.SpyInstance;
  let info: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    info = jest.spyOn(console, 'info').mockImplementation(() => undefined);
  });
  afterEach(() => {
    warn.mockRestore();
    info.mockRestore();
  });

  it('starts nothing when events are off, and warns when a publisher is named without enabling them', async () => {
    const kv = new KvCacheManager(4, 4, true);
    expect(await KvEvents.start(undefined, kv)).toBeNull();
    expect(await KvEvents.start(parseKvEventsConfig('{}'), kv)).toBeNull();
    expect(warn).not.toHaveBeenCalled();
    expect(await KvEvents.start(parseKvEventsConfig('{"publisher": "zmq"}'), kv)).toBeNull();
    expect(String(warn.mock.calls[0][0])).toContain('set enable_kv_cache_events to true');
    expect(kv.events).toBeNull();
  });

  it('warns that nothing is cached without prefix caching, as vLLM does', async () => {
    const kv = new KvCacheManager(4, 4, false);
    const events = await KvEvents.start(parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${await freePort()}` })), kv);
    try {
      expect(String(warn.mock.calls[0][0])).toContain('prefix caching is not');
    } finally {
      await events?.close();
    }
  });

  it('hears every pool of a hybrid manager and publishes one batch per flush', async () => {
    const port = await freePort();
    const kv = new HybridKvCacheManager(
      [
        { numBlocks: 8, window: 0, numLayers: 1 },
        { numBlocks: 8, window: 8, numLayers: 1 },
      ],
      4,
      true,
    );
    const events = (await KvEvents.start(parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${port}` })), kv))!;
    const sub = new Subscriber({ receiveTimeout: 3000 });
    sub.connect(`tcp://127.0.0.1:${port}`);
    sub.subscribe();
    try {
      expect(kv.pools.every((pool) => pool.events !== null)).toBe(true);
      const arriving = sub.receive();
      for (let i = 0; ; i++) {
        // Until the subscription reaches the publisher: reset and flush, one AllBlocksCleared batch each time.
        kv.resetPrefixCache();
        events.flush();
        const got = await Promise.race([arriving, new Promise<null>((r) => setTimeout(() => r(null), 100))]);
        if (got) {
          const [, , payload] = got;
          expect((decode(payload) as unknown[])[1]).toEqual([['AllBlocksCleared']]);
          break;
        }
        expect(i).toBeLessThan(50);
      }
    } finally {
      sub.close();
      await events.close();
    }
  });
});
