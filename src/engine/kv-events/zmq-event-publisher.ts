// vLLM's ZmqEventPublisher: every batch goes out on a PUB socket as [topic, seq, payload] (seq an
// 8-byte big-endian counter), and the last `buffer_steps` batches stay in memory for a ROUTER
// socket that answers a replay request [start seq] with each buffered batch from it, then the
// end marker [-1, empty]. The engine thread only encodes and queues: sending is awaited here, a
// full queue drops the batch from the live stream (it stays replayable, so subscribers see a seq
// gap and can ask for it), and the PUB socket drops at its high-water mark instead of blocking.

import { Publisher, Router } from 'zeromq';
import type { KvEventsConfig } from './kv-events-config';
import { encodeKvEventBatch, type KvEventBatch } from './kv-event-wire';
import { MsgpackWriter } from './msgpack-writer';

/** vLLM's END_SEQ: (-1).to_bytes(8, "big", signed=True). */
const END_SEQ = Buffer.alloc(8, 0xff);
/** How long close waits for queued batches to go out (vLLM's SHUTDOWN_TIMEOUT). */
const SHUTDOWN_TIMEOUT_MS = 1000;
/** At most one warning about dropped batches in this long. */
const DROP_WARNING_INTERVAL_MS = 10_000;

/** vLLM's heuristic: a wildcard or local endpoint is bound (stable side), anything else connected. */
export function bindsEndpoint(endpoint: string): boolean {
  return endpoint.includes('*') || endpoint.includes('::') || endpoint.startsWith('ipc://') || endpoint.startsWith('inproc://');
}

export interface KvEventPublisherStats {
  published: number;
  /** Batches the live stream skipped because the send queue was full. */
  dropped: number;
}

export class ZmqKvEventPublisher {
  private nextSeq = 0n;
  /** Ring of the last bufferSteps [seq bytes, payload] pairs; `ringStart` is the oldest. */
  private readonly ring: Array<readonly [Buffer, Buffer]> = [];
  private ringStart = 0;
  private readonly queue: Buffer[][] = [];
  private draining: Promise<void> | null = null;
  private readonly writer = new MsgpackWriter();
  private readonly topic: Buffer;
  private readonly replayLoop: Promise<void>;
  private lastDropWarning = -Infinity; // performance.now() ms of the last warning
  private closed = false;
  readonly stats: KvEventPublisherStats = { published: 0, dropped: 0 };

  private constructor(
    private readonly config: KvEventsConfig,
    private readonly pub: Publisher,
    private readonly router: Router | null,
  ) {
    this.topic = Buffer.from(config.topic, 'utf8');
    this.replayLoop = router ? this.serveReplays(router) : Promise.resolve();
  }

  /** Opens the sockets; fails (naming the endpoint) when one cannot be bound or connected. */
  static async start(config: KvEventsConfig): Promise<ZmqKvEventPublisher> {
    const pub = new Publisher({ sendHighWaterMark: config.hwm, linger: 0 });
    let router: Router | null = null;
    try {
      await openSocket(pub, config.endpoint, 'endpoint');
      if (config.replayEndpoint !== null) {
        router = new Router({ linger: 0 });
        await openSocket(router, config.replayEndpoint, 'replay_endpoint', true);
      }
    } catch (err) {
      pub.close();
      router?.close();
      throw err;
    }
    return new ZmqKvEventPublisher(config, pub, router);
  }

  /** Numbers, encodes and queues the batch; never waits. */
  publish(batch: KvEventBatch): void {
    if (this.closed) return;
    const seq = Buffer.allocUnsafe(8);
    seq.writeBigUInt64BE(this.nextSeq++);
    const payload = encodeKvEventBatch(batch, this.writer);
    this.remember(seq, payload);
    const limit = this.config.maxQueueSize;
    if (limit > 0 && this.queue.length >= limit) {
      this.stats.dropped++;
      this.warnDropped();
      return;
    }
    this.queue.push([this.topic, seq, payload]);
    this.draining ??= this.drain();
  }

  /** Sends what is queued (for at most a second), then closes the sockets. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.draining) await Promise.race([this.draining, new Promise((resolve) => setTimeout(resolve, SHUTDOWN_TIMEOUT_MS).unref())]);
    if (this.queue.length > 0) console.warn(`[kv-events] ${this.queue.length} batches still queued at shutdown were not sent`);
    this.pub.close();
    this.router?.close();
    await this.replayLoop;
  }

  private remember(seq: Buffer, payload: Buffer): void {
    const size = this.config.bufferSteps;
    if (size === 0) return;
    if (this.ring.length < size) {
      this.ring.push([seq, payload]);
    } else {
      this.ring[this.ringStart] = [seq, payload];
      this.ringStart = (this.ringStart + 1) % size;
    }
  }

  private async drain(): Promise<void> {
    for (let message = this.queue.shift(); message; message = this.queue.shift()) {
      try {
        await this.pub.send(message);
        this.stats.published++;
      } catch (err) {
        if (this.pub.closed) break;
        console.warn(`[kv-events] publishing a batch failed: ${(err as Error).message}`);
      }
    }
    this.draining = null;
  }

  /** Answers each replay request from the ring as it is when the request arrives. */
  private async serveReplays(router: Router): Promise<void> {
    try {
      for await (const frames of router) {
        if (frames.length !== 3) {
          console.warn(`[kv-events] invalid replay request: ${frames.length} frames, expected [identity, empty, start seq]`);
          continue;
        }
        const [client, , startBytes] = frames;
        const start = startBytes.length === 0 ? 0n : BigInt(`0x${startBytes.toString('hex')}`);
        const ordered = [...this.ring.slice(this.ringStart), ...this.ring.slice(0, this.ringStart)];
        for (const [seq, payload] of ordered) if (seq.readBigUInt64BE() >= start) await router.send([client, '', seq, payload]);
        await router.send([client, '', END_SEQ, '']);
      }
    } catch (err) {
      if (!router.closed) console.warn(`[kv-events] replay socket failed: ${(err as Error).message}`);
    }
  }

  private warnDropped(): void {
    const now = performance.now();
    if (now - this.lastDropWarning < DROP_WARNING_INTERVAL_MS) return;
    this.lastDropWarning = now;
    console.warn(`[kv-events] send queue full (max_queue_size ${this.config.maxQueueSize}): ${this.stats.dropped} batches left out of the live stream so far (still in the replay buffer)`);
  }
}

async function openSocket(socket: Publisher | Router, endpoint: string, key: string, alwaysBind = false): Promise<void> {
  try {
    if (alwaysBind || bindsEndpoint(endpoint)) await socket.bind(endpoint);
    else socket.connect(endpoint);
  } catch (err) {
    throw new Error(`--kv-events-config: cannot open ${key} ${endpoint}: ${(err as Error).message}`);
  }
}
