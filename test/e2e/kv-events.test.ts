// KV cache events from real servers (--kv-events-config) followed by a real ZMQ subscriber that
// decodes vLLM's structs itself: its view of the replica's prefix cache (stores add hashes,
// removals drop them, a clear empties it) equals the replica's own cached-block set through shared
// prefixes, evictions, reset_prefix_cache and sleep; sequence numbers run without a gap once replayed
// (the subscriber joins late and skips a message on purpose); two replicas name the same prompt's
// blocks alike.

import { decode } from '@msgpack/msgpack';
import { freePort } from '../helpers/free-port';
import OpenAI from 'openai';
import { Dealer, Publisher, Subscriber } from 'zeromq';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';

const onModel = needs(defaultTestModel());
const END_SEQ = 0xffffffffffffffffn;

type Event = unknown[];

/** A subscriber as llm-d's or Dynamo's: follows one replica's batches in seq order, replaying gaps. */
class Follower {
  readonly hashes = new Set<string>();
  readonly seqs: bigint[] = [];
  readonly stored: Event[] = [];
  removed = 0;
  cleared = 0;
  replays = 0;
  lost: bigint | null = null;
  private next = 0n;
  private readonly sub = new Subscriber();
  private readonly dealer = new Dealer();
  private readonly loop: Promise<void>;

  /** `loseOne`: the first live batch after catching up is dropped, as a lossy network would. */
  constructor(pubPort: number, replayPort: number, topic: string, private loseOne = false) {
    this.sub.connect(`tcp://127.0.0.1:${pubPort}`);
    this.sub.subscribe(topic);
    this.dealer.connect(`tcp://127.0.0.1:${replayPort}`);
    this.loop = this.follow(topic);
  }

  close(): Promise<void> {
    this.sub.close();
    this.dealer.close();
    return this.loop;
  }

  private async follow(topic: string): Promise<void> {
    try {
      for await (const [topicFrame, seqFrame, payload] of this.sub) {
        expect(topicFrame.toString()).toBe(topic);
        const seq = seqFrame.readBigUInt64BE();
        if (this.loseOne && this.replays > 0 && seq === this.next) {
          this.loseOne = false;
          this.lost = seq;
          continue;
        }
        if (seq > this.next) await this.replayFrom(this.next);
        if (seq === this.next) this.apply(seq, payload);
      }
    } catch (err) {
      if (!this.sub.closed) throw err;
    }
  }

  /** vLLM's replay protocol: [start seq] in, each [seq, payload] from it out, then [-1, empty]. */
  private async replayFrom(start: bigint): Promise<void> {
    this.replays++;
    const request = Buffer.alloc(8);
    request.writeBigUInt64BE(start);
    await this.dealer.send(['', request]);
    for (;;) {
      const [, seqFrame, payload] = await this.dealer.receive();
      const seq = seqFrame.readBigUInt64BE();
      if (seq === END_SEQ) {
        expect(payload.length).toBe(0);
        return;
      }
      if (seq === this.next) this.apply(seq, payload);
    }
  }

  private apply(seq: bigint, payload: Buffer): void {
    this.seqs.push(seq);
    this.next = seq + 1n;
    const [ts, events, rank] = decode(payload, { useBigInt64: true }) as [number, Event[], number];
    expect(typeof ts).toBe('number');
    expect(rank).toBe(0);
    for (const event of events) {
      switch (event[0]) {
        case 'BlockStored': {
          const [, blockHashes, , tokenIds, blockSize, , medium] = event as [string, bigint[], unknown, number[], number, unknown, string];
          expect(tokenIds.length).toBe(blockHashes.length * blockSize);
          expect(medium).toBe('GPU');
          for (const h of blockHashes) this.hashes.add(String(h));
          this.stored.push(event);
          break;
        }
        case 'BlockRemoved':
          for (const h of event[1] as bigint[]) expect(this.hashes.delete(String(h))).toBe(true);
          this.removed += (event[1] as bigint[]).length;
          break;
        case 'AllBlocksCleared':
          this.hashes.clear();
          this.cleared++;
          break;
        default:
          throw new Error(`unexpected event ${String(event[0])}`);
      }
    }
  }
}


async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Replica {
  server: TestServer;
  client: OpenAI;
  pubPort: number;
  replayPort: number;
  topic: string;
}

async function startReplica(name: string): Promise<Replica> {
  const [pubPort, replayPort] = [await freePort(), await freePort()];
  const topic = `kv@${name}@m`;
  const config = { enable_kv_cache_events: true, endpoint: `tcp://*:${pubPort}`, replay_endpoint: `tcp://*:${replayPort}`, topic };
  const server = await startServer(
    ['--served-model-name', 'm', '--enable-sleep-mode', '--max-model-len', '256', '--num-gpu-blocks-override', '24', '--kv-events-config', JSON.stringify(config)],
    { env: { VLLM_SERVER_DEV_MODE: '1' } },
  );
  return { server, client: new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'none', maxRetries: 0 }), pubPort, replayPort, topic };
}

async function cachedBlocks(r: Replica): Promise<string[]> {
  const res = await fetch(`${r.server.baseUrl}/kv_cache/blocks`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { groups: Array<{ group_idx: number; block_size: number; block_hashes: string[] }> };
  expect(body.groups.map((g) => [g.group_idx, g.block_size])).toEqual([[0, 16]]);
  return body.groups[0].block_hashes;
}

const sameSet = (a: Iterable<string>, b: Iterable<string>) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
const tokens = (from: number, n: number) => Array.from({ length: n }, (_, i) => 1 + ((from + i * 7) % 500));

onModel.describe('KV cache events (--kv-events-config)', () => {
  let a: Replica;
  let b: Replica;
  let follower: Follower | null = null;

  beforeAll(async () => {
    [a, b] = await Promise.all([startReplica('a'), startReplica('b')]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await follower?.close();
    await Promise.all([a?.server.stop(), b?.server.stop()]);
  });

  const complete = (r: Replica, prompt: number[]) => r.client.completions.create({ model: 'm', prompt, max_tokens: 2, temperature: 0 });

  it("follows a replica's prefix cache through shared prefixes, evictions, reset and sleep, without a gap in seq", async () => {
    const prefix = tokens(0, 48);
    await complete(a, [...prefix, ...tokens(1001, 20)]); // before anyone listens: replayed later
    follower = new Follower(a.pubPort, a.replayPort, a.topic, true);
    const converged = async (what: string) => until(what, async () => sameSet(follower!.hashes, await cachedBlocks(a)));

    // Shared prefixes: each request caches only the blocks past the prefix the cache already holds.
    for (let i = 0; i < 4; i++) await complete(a, [...prefix, ...tokens(2003 + 100 * i, 30)]);
    await converged('shared prefixes');
    expect(follower.replays).toBeGreaterThanOrEqual(1);
    expect(follower.hashes.size).toBeGreaterThan(3);

    // 24 blocks of 16 tokens: new long prompts reuse the memory of cached blocks.
    for (let i = 0; i < 5; i++) await complete(a, tokens(5000 + 37 * i, 200));
    await converged('evictions');
    expect(follower.removed).toBeGreaterThan(0);

    const reset = await fetch(`${a.server.baseUrl}/reset_prefix_cache`, { method: 'POST' });
    expect(reset.status).toBe(200);
    await until('the clear', () => follower!.cleared === 1);
    expect(follower.hashes.size).toBe(0);
    expect(await cachedBlocks(a)).toEqual([]);

    await complete(a, prefix);
    await converged('a store after the reset');

    // Sleep drops the KV cache: one more clear.
    for (const route of ['/sleep?level=1', '/wake_up']) expect((await fetch(`${a.server.baseUrl}${route}`, { method: 'POST' })).status).toBe(200);
    await until('the clear of sleep', () => follower!.cleared >= 2);
    expect(follower.hashes.size).toBe(0);
    await complete(a, prefix);
    await converged('a store after waking up');
    // Every batch exactly once, in order: what the late join missed and the lost batch were replayed.
    expect(follower.lost).not.toBeNull();
    expect(follower.seqs).toEqual(follower.seqs.map((_, i) => BigInt(i)));
    expect(follower.replays).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it("names the same prompt's blocks alike on two replicas", async () => {
    const listenB = new Follower(b.pubPort, b.replayPort, b.topic);
    try {
      for (const r of [a, b]) expect((await fetch(`${r.server.baseUrl}/reset_prefix_cache`, { method: 'POST' })).status).toBe(200);
      const prompt = tokens(9000, 100);
      await Promise.all([complete(a, prompt), complete(b, prompt)]);
      const [onA, onB] = [await cachedBlocks(a), await cachedBlocks(b)];
      expect(onA).toHaveLength(6);
      expect(sameSet(onA, onB)).toBe(true);
      await until("b's events", () => sameSet(listenB.hashes, onB));
    } finally {
      await listenB.close();
    }
  }, 20_000);

  it('closes its sockets when the server stops: the ports can be bound again', async () => {
    expect(await b.server.stop()).toBe(0);
    const again = [new Publisher(), new Publisher()];
    try {
      await again[0].bind(`tcp://*:${b.pubPort}`);
      await again[1].bind(`tcp://*:${b.replayPort}`);
    } finally {
      for (const socket of again) socket.close();
    }
  }, 20_000);
});
