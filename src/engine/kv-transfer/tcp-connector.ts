// KV transfer over plain TCP between replicas' host memory, in the flow of vLLM's NixlConnector:
// the producer keeps a finished prefill's blocks pinned and listens; the consumer connects to the
// remote_host:remote_port its kv_transfer_params name and pulls them (wire.ts). A transfer is
// served once; unpulled ones expire after abort_request_timeout. The sockets live in a thread of
// their own (tcp-transfer-thread.ts). When the KV arrays are in shared memory (a producer's
// segmented runner), that thread also checks pulls, copies the pinned blocks out and expires
// offers, so a pull never waits for a running step; otherwise the engine thread does, here.

import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../worker/worker-thread';
import { isProducer } from './kv-transfer-config';
import type { KvConnector, KvConnectorContext, OfferedTransfer, PullJob } from './kv-connector';
import type { FromTcpThread, TcpThreadData, ToTcpThread } from './tcp-thread-protocol';
import { checkPull } from './pull-check';
import type { PullRequest } from './wire';

interface Offer {
  transfer: OfferedTransfer;
  /** The expiry timer of an offer served from here; null: the socket thread serves and expires it. */
  timer: NodeJS.Timeout | null;
}

interface PendingPull {
  resolve(blocks: Buffer[]): void;
  reject(err: Error): void;
  /** The thread's own deadline plus a margin: no request waits forever on a thread that went silent. */
  guard: NodeJS.Timeout;
}

const GUARD_MARGIN_MS = 5000;

export class TcpConnector implements KvConnector {
  private readonly offers = new Map<string, Offer>();
  private readonly pulls = new Map<number, PendingPull>();
  private nextPull = 0;
  private readonly thread: Worker;
  private readonly listening: Promise<number> | null;
  private readonly host: string;
  private port: number;
  private closed = false;
  /** Set when the socket thread died: pulls fail at once (the requests prefill locally). */
  private threadError: string | null = null;

  constructor(private readonly context: KvConnectorContext) {
    this.host = context.config.host ?? context.defaultHost;
    this.port = context.config.port;
    const producer = isProducer(context.config);
    const data: TcpThreadData = {
      listen: producer ? { host: this.host, port: this.port } : null,
      shape: context.shape,
      engineId: context.config.engineId,
      blockBytes: context.blocks.blockBytes(),
      timeoutMs: context.config.transferTimeoutS * 1000,
    };
    this.thread = startWorkerThread(__dirname, 'tcp-transfer-thread', data);
    this.thread.unref();
    let listened: ((port: number) => void) | null = null;
    let failed: ((err: Error) => void) | null = null;
    this.listening = producer ? new Promise<number>((resolve, reject) => ((listened = resolve), (failed = reject))) : null;
    this.listening?.catch(() => undefined);
    this.thread.on('message', (message: FromTcpThread) => {
      if (message.type === 'listening') listened?.(message.port);
      else if (message.type === 'listen-failed') failed?.(new Error(`--kv-transfer-config: TcpConnector ${message.error}`));
      else this.onThreadMessage(message);
    });
    this.thread.on('error', (err) => {
      failed?.(err);
      this.failPulls(`transfer thread failed: ${err.message}`);
    });
    this.thread.on('exit', () => this.failPulls(this.threadError ?? 'transfer thread exited'));
  }

  get numOffered(): number {
    return this.offers.size;
  }

  async start(): Promise<void> {
    if (!this.listening) return;
    this.port = await this.listening;
    console.info(`[kv-transfer] TcpConnector of engine ${this.context.config.engineId} listening on ${this.host}:${this.port} (${this.context.config.role})`);
  }

  offer(transfer: OfferedTransfer): Record<string, unknown> {
    const expireMs = this.context.config.abortRequestTimeoutS * 1000;
    const layout = this.context.blocks.sharedLayout?.() ?? null;
    if (layout) {
      this.offers.set(transfer.requestId, { transfer, timer: null });
      this.send({ type: 'offer', transfer, layout, expireMs });
    } else {
      const timer = setTimeout(() => this.expire(transfer.requestId, 'expired'), expireMs);
      timer.unref();
      this.offers.set(transfer.requestId, { transfer, timer });
    }
    return {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: [...transfer.blockIds],
      remote_engine_id: this.context.config.engineId,
      remote_request_id: transfer.requestId,
      remote_host: this.host,
      remote_port: this.port,
      tp_size: 1,
    };
  }

  pull(job: PullJob): Promise<Buffer[]> {
    if (this.closed || this.threadError !== null) return Promise.reject(new Error(this.threadError ?? 'the KV connector is closed'));
    const id = this.nextPull++;
    return new Promise<Buffer[]>((resolve, reject) => {
      const guard = setTimeout(() => this.settle(id)?.reject(new Error('the transfer thread did not answer')), this.context.config.transferTimeoutS * 1000 + GUARD_MARGIN_MS);
      this.pulls.set(id, { resolve, reject, guard });
      this.send({ type: 'pull', id, source: job.source, hashes: [...job.hashes], firstBlock: job.firstBlock });
    });
  }

  /** Takes a pending pull out (its guard cleared), if it is still pending. */
  private settle(id: number): PendingPull | undefined {
    const pending = this.pulls.get(id);
    if (!pending) return undefined;
    this.pulls.delete(id);
    clearTimeout(pending.guard);
    return pending;
  }

  withdrawAll(): void {
    const shared = [...this.offers.values()].filter((offer) => offer.timer === null).map((offer) => offer.transfer.requestId);
    if (shared.length > 0) this.send({ type: 'withdraw', requestIds: shared });
    for (const id of [...this.offers.keys()]) this.expire(id, 'withdrawn');
  }

  async close(): Promise<void> {
    this.withdrawAll();
    this.closed = true;
    this.send({ type: 'close' });
    await this.thread.terminate();
  }

  private onThreadMessage(message: Exclude<FromTcpThread, { type: 'listening' | 'listen-failed' }>): void {
    if (message.type === 'released') {
      this.expire(message.requestId, message.reason);
      return;
    }
    if (message.type === 'read') {
      const answer = this.answer(message.request);
      if ('error' in answer) this.send({ type: 'refuse', id: message.id, error: answer.error });
      else this.send({ type: 'blocks', id: message.id, buffer: answer.buffer, count: answer.count }, [answer.buffer]);
      return;
    }
    const pending = this.settle(message.id);
    if (!pending) return;
    if (message.type === 'pull-failed') {
      pending.reject(new Error(message.error));
      return;
    }
    const size = this.context.blocks.blockBytes();
    pending.resolve(Array.from({ length: message.count }, (_, i) => Buffer.from(message.buffer, i * size, size)));
  }

  /** The blocks of a valid pull, copied out in one buffer (the offer is consumed and its blocks freed), or why not. */
  private answer(request: PullRequest): { buffer: ArrayBuffer; count: number } | { error: string } {
    const offer = this.offers.get(request?.transfer);
    // An offer in shared memory is the socket thread's to serve: one it no longer holds has expired.
    const checked = checkPull(request, offer?.timer === null ? undefined : offer?.transfer, this.context.config.engineId, this.context.shape);
    if ('error' in checked) return checked;
    const ids = checked.blockIds;
    const size = this.context.blocks.blockBytes();
    const out = new Uint8Array(ids.length * size);
    ids.forEach((id, i) => out.set(this.context.blocks.readBlock(id), i * size));
    this.expire(request.transfer, 'sent');
    return { buffer: out.buffer, count: ids.length };
  }

  private send(message: ToTcpThread, transfer: ArrayBuffer[] = []): void {
    if (!this.closed || message.type === 'close') this.thread.postMessage(message, transfer);
  }

  private failPulls(error: string): void {
    this.threadError ??= error;
    for (const id of [...this.pulls.keys()]) this.settle(id)?.reject(new Error(error));
  }

  private expire(requestId: string, reason: 'sent' | 'expired' | 'withdrawn'): void {
    const offer = this.offers.get(requestId);
    if (!offer) return;
    if (offer.timer) clearTimeout(offer.timer);
    this.offers.delete(requestId);
    this.context.release(requestId, reason);
  }
}
