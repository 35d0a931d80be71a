// The publisher on real ZMQ sockets: [topic, seq, payload] frames with consecutive 8-byte seqs,
// a replay ROUTER that answers from the buffer of the last buffer_steps batches and ends with
// vLLM's [-1, empty] marker, and a full send queue that drops from the live stream (counted, still
// replayable) instead of making the engine wait.

import { decode } from '@msgpack/msgpack';
import { freePort } from '../../../helpers/free-port';
import { Dealer, Subscriber } from 'zeromq';
import { parseKvEventsConfig } from '../../../../src/engine/kv-events/kv-events-config';
import { bindsEndpoint, ZmqKvEventPublisher } from '../../../../src/engine/kv-events/zmq-event-publisher';
import type { KvEventBatch } from '../../../../src/engine/kv-events/kv-event-wire';


const batch = (n: number): KvEventBatch => ({ ts: n + 0.5, dataParallelRank: 0, events: [{ type: 'BlockRemoved', blockHashes: [BigInt(n)], medium: 'GPU', groupIdx: 0 }] });
const hashOf = (payload: Buffer) => Number((decode(payload, { useBigInt64: true }) as [number, unknown[][]])[1][0][1]);

async function replay(port: number, from: bigint): Promise<Array<[bigint, Buffer]>> {
  const dealer = new Dealer({ receiveTimeout: 3000 });
  dealer.connect(`tcp://127.0.0.1:${port}`);
  try {
    const start = Buffer.alloc(8);
    start.writeBigUInt64BE(from);
    await dealer.send(['', start]);
    const got: Array<[bigint, Buffer]> = [];
    for (;;) {
      const [empty, seq, payload] = await dealer.receive();
      expect(empty.length).toBe(0);
      if (seq.readBigInt64BE() === -1n) return got;
      got.push([seq.readBigUInt64BE(), payload]);
    }
  } finally {
    dealer.close();
  }
}

describe('ZmqKvEventPublisher', () => {
  it("binds wildcard and local endpoints and connects to others, as vLLM's", () => {
    expect(bindsEndpoint('tcp://*:5557')).toBe(true);
    expect(bindsEndpoint('tcp://[::]:5557')).toBe(true);
    expect(bindsEndpoint('ipc:///tmp/kv')).toBe(true);
    expect(bindsEndpoint('inproc://kv')).toBe(true);
    expect(bindsEndpoint('tcp://indexer:5557')).toBe(false);
  });

  it('publishes consecutive seqs under the topic and replays the buffered batches from a seq', async () => {
    const [pubPort, replayPort] = [await freePort(), await freePort()];
    const config = parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${pubPort}`, replay_endpoint: `tcp://*:${replayPort}`, buffer_steps: 3, topic: 'kv@p@m' }));
    const publisher = await ZmqKvEventPublisher.start(config);
    const sub = new Subscriber({ receiveTimeout: 3000 });
    sub.connect(`tcp://127.0.0.1:${pubPort}`);
    sub.subscribe('kv@');
    try {
      // Until the subscription has reached the publisher, batches go nowhere: publish until one arrives.
      const arriving = sub.receive();
      let first: Buffer[] | null = null;
      for (let n = 0; first === null; n++) {
        publisher.publish(batch(n));
        first = await Promise.race([arriving, new Promise<null>((r) => setTimeout(() => r(null), 100))]);
      }
      const firstSeq = first[1].readBigUInt64BE();
      for (let n = 0; n < 4; n++) publisher.publish(batch(100 + n));
      const seqs: bigint[] = [];
      for (let n = 0; n < 4; ) {
        const [topic, seq, payload] = await sub.receive();
        if (hashOf(payload) < 100) continue; // a probe published after the one that arrived first
        expect(topic.toString()).toBe('kv@p@m');
        expect(seq.length).toBe(8);
        expect(hashOf(payload)).toBe(100 + n);
        seqs.push(seq.readBigUInt64BE());
        n++;
      }
      expect(seqs[0]).toBeGreaterThan(firstSeq);
      expect(seqs).toEqual([0n, 1n, 2n, 3n].map((i) => seqs[0] + i));
      // buffer_steps 3: only the last three can be replayed.
      const last = seqs[3];
      expect((await replay(replayPort, 0n)).map(([seq, p]) => [seq, hashOf(p)])).toEqual([
        [last - 2n, 101],
        [last - 1n, 102],
        [last, 103],
      ]);
      expect((await replay(replayPort, last)).map(([seq]) => seq)).toEqual([last]);
      expect(await replay(replayPort, last + 1n)).toEqual([]);
    } finally {
      sub.close();
      await publisher.close();
    }
  });

  it('drops batches from a full send queue without waiting, counts them, and still replays them', async () => {
    const [pubPort, replayPort] = [await freePort(), await freePort()];
    const config = parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${pubPort}`, replay_endpoint: `tcp://*:${replayPort}`, max_queue_size: 2, hwm: 1 }));
    const publisher = await ZmqKvEventPublisher.start(config);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      for (let n = 0; n < 10; n++) publisher.publish(batch(n)); // one being sent, two queued
      expect(publisher.stats.dropped).toBe(7);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('max_queue_size 2');
      const replayed = await replay(replayPort, 0n);
      expect(replayed.map(([seq, p]) => [Number(seq), hashOf(p)])).toEqual(Array.from({ length: 10 }, (_, n) => [n, n]));
    } finally {
      warn.mockRestore();
      await publisher.close();
    }
    expect(publisher.stats.published).toBe(3);
  });

  it('fails to start naming the endpoint it cannot bind', async () => {
    const port = await freePort();
    const config = parseKvEventsConfig(JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${port}` }));
    const first = await ZmqKvEventPublisher.start(config);
    try {
      await expect(ZmqKvEventPublisher.start(config)).rejects.toThrow(`--kv-events-config: cannot open endpoint tcp://*:${port}`);
    } finally {
      await first.close();
    }
  });
});
