// TcpConnector's wire: length-prefixed frames (4-byte big-endian length, 1-byte kind, payload),
// a JSON message or a block's raw bytes. A pull is one connection: the consumer's request names
// the transfer, its KV shape and its prompt's block hashes; the producer answers with its shape
// and each block's length and SHA-256, then the blocks, or with an error. Both sides check.

import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';

export const FRAME_JSON = 1;
export const FRAME_BYTES = 2;
const HEADER = 5;
/** No frame is larger: a garbled length is an error, not an allocation. */
export const MAX_FRAME_BYTES = 256 * 2 ** 20;

export interface Frame {
  kind: typeof FRAME_JSON | typeof FRAME_BYTES;
  payload: Buffer;
}

/** What must agree between two replicas for their blocks to be interchangeable. */
export interface KvShape {
  num_layers: number;
  num_kv_heads: number;
  head_dim: number;
  block_size: number;
  kv_dtype: string;
  /** Per pool: its layers and window (one full-attention pool here). */
  pools: Array<{ layers: number; window: number }>;
}

export interface PullRequest {
  type: 'pull';
  /** The producer's request id (kv_transfer_params.remote_request_id). */
  transfer: string;
  /** The producer the consumer expects (remote_engine_id). */
  engine_id: string;
  shape: KvShape;
  /** The consumer's chained hashes of its prompt, one per block (the last may cover a partial block). */
  hashes: string[];
  /** Blocks before this one are not sent (the consumer has them from its own prefix cache). */
  first_block: number;
}

export interface BlockDigest {
  bytes: number;
  sha256: string;
}

export type PullReply = { type: 'blocks'; shape: KvShape; blocks: BlockDigest[] } | { type: 'error'; error: string };

export function encodeFrame(kind: Frame['kind'], payload: Buffer): Buffer[] {
  if (payload.length > MAX_FRAME_BYTES) throw new Error(`frame of ${payload.length} bytes exceeds ${MAX_FRAME_BYTES}`);
  const header = Buffer.allocUnsafe(HEADER);
  header.writeUInt32BE(payload.length, 0);
  header.writeUInt8(kind, 4);
  return [header, payload];
}

export function encodeJson(message: PullRequest | PullReply): Buffer[] {
  return encodeFrame(FRAME_JSON, Buffer.from(JSON.stringify(message)));
}

/** Splits a byte stream into frames; throws on a frame that is too large or of an unknown kind. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  push(chunk: Buffer): Frame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.buffered < HEADER) return frames;
      const head = this.peek(HEADER);
      const length = head.readUInt32BE(0);
      const kind = head.readUInt8(4);
      if (kind !== FRAME_JSON && kind !== FRAME_BYTES) throw new Error(`unknown frame kind ${kind}`);
      if (length > MAX_FRAME_BYTES) throw new Error(`frame of ${length} bytes exceeds ${MAX_FRAME_BYTES}`);
      if (this.buffered < HEADER + length) return frames;
      const all = this.take(HEADER + length);
      frames.push({ kind, payload: all.subarray(HEADER) });
    }
  }

  private peek(n: number): Buffer {
    if (this.chunks[0].length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0];
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(0, n);
  }
}

/** A JSON frame's message; throws when the frame is not JSON or not an object with a `type`. */
export function decodeJson<T extends { type: string }>(frame: Frame): T {
  if (frame.kind !== FRAME_JSON) throw new Error('expected a JSON frame');
  const value = JSON.parse(frame.payload.toString('utf8')) as unknown;
  if (value === null || typeof value !== 'object' || typeof (value as { type?: unknown }).type !== 'string') throw new Error('malformed message');
  return value as T;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Why two shapes differ (null when they agree). */
export function shapeMismatch(mine: KvShape, theirs: KvShape): string | null {
  for (const key of ['num_layers', 'num_kv_heads', 'head_dim', 'block_size', 'kv_dtype'] as const) {
    if (mine[key] !== theirs?.[key]) return `${key} ${String(theirs?.[key])} != ${String(mine[key])}`;
  }
  if (JSON.stringify(mine.pools) !== JSON.stringify(theirs.pools)) return `KV pools ${JSON.stringify(theirs.pools)} != ${JSON.stringify(mine.pools)}`;
  return null;
}

/** Frames of a socket, one at a time: `next` waits for the next one, failing on close, error or `timeoutMs`. */
export class FrameSocket {
  private readonly reader = new FrameReader();
  private readonly frames: Frame[] = [];
  private failure: Error | null = null;
  private waiter: { resolve: (f: Frame) => void; reject: (e: Error) => void } | null = null;

  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const frame of this.reader.push(chunk)) this.frames.push(frame);
      } catch (err) {
        this.fail(err as Error);
        socket.destroy();
        return;
      }
      this.deliver();
    });
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed')));
  }

  send(buffers: Buffer[]): void {
    for (const b of buffers) this.socket.write(b);
  }

  next(timeoutMs: number): Promise<Frame> {
    const ready = this.frames.shift();
    if (ready) return Promise.resolve(ready);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiter = {
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  private deliver(): void {
    const waiter = this.waiter;
    const frame = waiter ? this.frames.shift() : undefined;
    if (!waiter || !frame) return;
    this.waiter = null;
    waiter.resolve(frame);
  }

  private fail(err: Error): void {
    this.failure ??= err;
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.reject(this.failure);
  }
}
