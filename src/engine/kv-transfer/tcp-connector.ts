// KV transfer over plain TCP between replicas' host memory, in the flow of vLLM's NixlConnector:
// the producer keeps a finished prefill's blocks pinned and listens; the consumer connects to the
// remote_host:remote_port its kv_transfer_params name and pulls them (wire.ts). A transfer is
// served once; unpulled ones expire after abort_request_timeout.

import * as net from 'node:net';
import type { KvConnector, KvConnectorContext, OfferedTransfer, PullJob } from './kv-connector';
import { decodeJson, encodeFrame, encodeJson, FRAME_BYTES, FrameSocket, sha256, shapeMismatch, type PullReply, type PullRequest } from './wire';

interface Offer {
  transfer: OfferedTransfer;
  timer: NodeJS.Timeout;
}

export class TcpConnector implements KvConnector {
  private readonly offers = new Map<string, Offer>();
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private host: string;
  private port: number;

  constructor(private readonly context: KvConnectorContext) {
    this.host = context.config.host ?? context.defaultHost;
    this.port = context.config.port;
  }

  get numOffered(): number {
    return this.offers.size;
  }

  async start(): Promise<void> {
    const server = net.createServer((socket) => void this.serve(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new Error(`--kv-transfer-config: TcpConnector cannot listen on ${this.host}:${this.port}: ${err.message}`)));
      server.listen(this.port, this.host, () => resolve());
    });
    server.on('error', (err) => console.error(`[kv-transfer] ${err.message}`));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
    console.info(`[kv-transfer] TcpConnector of engine ${this.context.config.engineId} listening on ${this.host}:${this.port} (${this.context.config.role})`);
  }

  offer(transfer: OfferedTransfer): Record<string, unknown> {
    const timer = setTimeout(() => this.expire(transfer.requestId, 'expired'), this.context.config.abortRequestTimeoutS * 1000);
    timer.unref();
    this.offers.set(transfer.requestId, { transfer, timer });
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

  async pull(job: PullJob): Promise<Buffer[]> {
    const { source } = job;
    const timeoutMs = this.context.config.transferTimeoutS * 1000;
    const socket = net.connect({ host: source.host, port: source.port });
    const deadline = setTimeout(() => socket.destroy(new Error(`transfer took longer than ${timeoutMs} ms`)), timeoutMs);
    const frames = new FrameSocket(socket);
    try {
      const request: PullRequest = { type: 'pull', transfer: source.requestId, engine_id: source.engineId, shape: this.context.shape, hashes: [...job.hashes], first_block: job.firstBlock };
      frames.send(encodeJson(request));
      const reply = decodeJson<PullReply>(await frames.next(timeoutMs));
      if (reply.type === 'error') throw new Error(`producer refused: ${reply.error}`);
      if (reply.type !== 'blocks') throw new Error(`unexpected reply ${String((reply as { type: unknown }).type)}`);
      const mismatch = shapeMismatch(this.context.shape, reply.shape);
      if (mismatch) throw new Error(`KV shape mismatch: ${mismatch}`);
      const expected = job.hashes.length - job.firstBlock;
      if (!Array.isArray(reply.blocks) || reply.blocks.length !== expected) throw new Error(`expected ${expected} blocks, the producer announced ${reply.blocks?.length}`);
      const blockBytes = this.context.blocks.blockBytes();
      const out: Buffer[] = [];
      for (const digest of reply.blocks) {
        const frame = await frames.next(timeoutMs);
        if (frame.kind !== FRAME_BYTES) throw new Error('expected block bytes');
        if (frame.payload.length !== digest.bytes || digest.bytes !== blockBytes) throw new Error(`block of ${frame.payload.length} bytes, announced ${digest.bytes}, a block holds ${blockBytes}`);
        if (sha256(frame.payload) !== digest.sha256) throw new Error('block checksum mismatch');
        out.push(frame.payload);
      }
      return out;
    } finally {
      clearTimeout(deadline);
      socket.destroy();
    }
  }

  withdrawAll(): void {
    for (const id of [...this.offers.keys()]) this.expire(id, 'withdrawn');
  }

  async close(): Promise<void> {
    this.withdrawAll();
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Answers one pull: checks it against the offer, copies the blocks, frees them, sends them. */
  private async serve(socket: net.Socket): Promise<void> {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    const frames = new FrameSocket(socket);
    try {
      const request = decodeJson<PullRequest>(await frames.next(this.context.config.transferTimeoutS * 1000));
      const answer = this.answer(request);
      if ('error' in answer) {
        frames.send(encodeJson({ type: 'error', error: answer.error }));
      } else {
        frames.send(encodeJson({ type: 'blocks', shape: this.context.shape, blocks: answer.blocks.map((b) => ({ bytes: b.length, sha256: sha256(b) })) }));
        for (const block of answer.blocks) frames.send(encodeFrame(FRAME_BYTES, block));
      }
      socket.end();
    } catch {
      // A malformed or silent client: nothing was taken from an offer unless it was valid.
      socket.destroy();
    }
  }

  /** The blocks of a valid pull (the offer is consumed and its blocks freed), or why not. */
  private answer(request: PullRequest): { blocks: Buffer[] } | { error: string } {
    if (request.type !== 'pull' || typeof request.transfer !== 'string') return { error: 'expected a pull request' };
    if (request.engine_id !== this.context.config.engineId) return { error: `this is engine ${this.context.config.engineId}, not ${String(request.engine_id)}` };
    const mismatch = shapeMismatch(this.context.shape, request.shape);
    if (mismatch) return { error: `KV shape mismatch: ${mismatch}` };
    const offer = this.offers.get(request.transfer);
    if (!offer) return { error: `unknown or expired transfer ${request.transfer}` };
    const { transfer } = offer;
    const hashes = Array.isArray(request.hashes) ? request.hashes : [];
    if (hashes.length !== transfer.hashes.length || hashes.some((h, i) => h !== transfer.hashes[i])) return { error: `the prompt's block hashes differ from transfer ${request.transfer}'s` };
    const first = request.first_block;
    if (!Number.isInteger(first) || first < 0 || first > transfer.blockIds.length) return { error: `first_block ${String(first)} out of range` };
    const blocks = transfer.blockIds.slice(first).map((id) => this.context.blocks.readBlock(id));
    this.expire(request.transfer, 'sent');
    return { blocks };
  }

  private expire(requestId: string, reason: 'sent' | 'expired' | 'withdrawn'): void {
    const offer = this.offers.get(requestId);
    if (!offer) return;
    clearTimeout(offer.timer);
    this.offers.delete(requestId);
    this.context.release(requestId, reason);
  }
}
