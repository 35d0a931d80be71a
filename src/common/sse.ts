// Server-sent events on the raw Fastify reply (Nest's @Sse only fits GET routes). Frames are
// `data: <json>\n\n`; the stream ends with `data: [DONE]\n\n`. An error after the headers are
// sent becomes a `data: {"error": {...}}` frame. A client that disconnects aborts `signal`,
// which handlers pass to EngineClient.generate so the engine frees the sequence at once.
// Typed event streams (the Responses API) also write an `event: <type>` line per frame and end
// without [DONE], as OpenAI does: `new SseStream(reply, { eventOf: (f) => f.type, doneMarker: false })`.
//
// Backpressure: a frame the socket cannot take at once (write() returns false) is the last one
// written until the socket drains, and the next frame is not even pulled from the engine stream
// meanwhile; the engine then pauses the request after a few outputs (engine/output-stream.ts). A
// client that takes nothing for --stream-stall-timeout seconds is disconnected, which aborts its
// request and frees its KV cache.
//
// The socket write is a chunk's largest cost, so the frames of steps that queued up leave in one
// writev per socket (engine/worker/spawn-worker.ts); a chunk's JSON comes from a per-response
// template (serving/chunk-template.ts). Frames are not corked across event-loop turns: that saved
// ~2 us a chunk but let a paused stream's memory grow. Figures: docs/perf/sse.md.
//
// Usage (common/respond.ts does this for every generation route):
//   const sse = new SseStream(reply);
//   await sse.pipe(serving.stream(prepared, sse.signal));

import { Logger } from '@nestjs/common';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { chunkJson } from '../serving/chunk-template';
import { mapError } from './error-mapping';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

export interface StreamSettings {
  /** A client that takes no byte of its response for this long is disconnected; 0 = never. */
  stallTimeoutMs: number;
}

const DEFAULT_SETTINGS: StreamSettings = { stallTimeoutMs: 60_000 };
const settingsByServer = new WeakMap<object, StreamSettings>();
const logger = new Logger('Streams');

/** Sets the stall timeout of the responses `fastify` writes (app-factory, from the flags). */
export function configureStreams(fastify: FastifyInstance, settings: StreamSettings): void {
  settingsByServer.set(fastify, settings);
}

export function streamSettingsOf(reply: FastifyReply): StreamSettings {
  return settingsByServer.get(reply.server) ?? DEFAULT_SETTINGS;
}

/** Bytes written and not yet taken by the client's TCP stack. */
function unsentBytes(raw: ServerResponse): number {
  return raw.socket?.writableLength ?? raw.writableLength;
}

/**
 * Resolves once `raw` has flushed what it buffered (true), or has closed (false). While it waits,
 * a client that takes no byte for `stallTimeoutMs` is disconnected.
 */
export function flushed(raw: ServerResponse, stallTimeoutMs: number): Promise<boolean> {
  if (raw.destroyed || raw.writableEnded) return Promise.resolve(!raw.destroyed);
  return new Promise((resolve) => {
    let lastUnsent = unsentBytes(raw);
    let lastProgress = performance.now();
    const check = stallTimeoutMs > 0 ? setInterval(() => {
      const unsent = unsentBytes(raw);
      if (unsent < lastUnsent) lastProgress = performance.now();
      lastUnsent = unsent;
      if (performance.now() - lastProgress >= stallTimeoutMs) {
        logger.warn(`client took nothing for ${stallTimeoutMs / 1000} s: closing its connection (--stream-stall-timeout)`);
        raw.destroy();
      }
    }, Math.max(50, Math.min(1000, stallTimeoutMs / 4))) : null;
    const done = (ok: boolean) => (): void => {
      if (check) clearInterval(check);
      raw.off('drain', onDrain);
      raw.off('finish', onDrain);
      raw.off('close', onClose);
      resolve(ok);
    };
    const onDrain = done(true);
    const onClose = done(false);
    raw.on('drain', onDrain);
    raw.on('finish', onDrain);
    raw.on('close', onClose);
  });
}

/**
 * AbortSignal that fires when the client goes away before the response finished. Use it for
 * non-streaming requests too, so a dropped connection aborts the engine request.
 */
export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}

/** After a whole response was handed to the socket: disconnect a client that stops taking it. */
export function closeWhenStalled(reply: FastifyReply): void {
  const raw = reply.raw;
  if (raw.writableFinished || raw.destroyed || unsentBytes(raw) === 0) return;
  void flushed(raw, streamSettingsOf(reply).stallTimeoutMs);
}

export interface SseOptions {
  /** The `event:` name of a frame (undefined = no event line). */
  eventOf?: (frame: unknown) => string | undefined;
  /** End with `data: [DONE]` (default true; OpenAI's typed event streams have none). */
  doneMarker?: boolean;
}

export class SseStream {
  /** Aborted when the client disconnects mid-stream. */
  readonly signal: AbortSignal;
  private started = false;

  constructor(
    private readonly reply: FastifyReply,
    private readonly options: SseOptions = {},
  ) {
    this.signal = disconnectSignal(reply);
  }

  get closed(): boolean {
    return this.signal.aborted || this.reply.raw.writableEnded || this.reply.raw.destroyed;
  }

  /** Sends the 200 + event-stream headers. Headers set earlier with reply.header() (CORS, X-Request-Id) are kept. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.reply.hijack();
    const headers = { ...this.reply.getHeaders(), ...SSE_HEADERS };
    this.reply.raw.writeHead(200, headers as Record<string, string>);
  }

  /**
   * Writes one `data: <json>` frame, after an `event: <name>` line when the stream is typed;
   * resolves once the socket can take the next one.
   */
  async send(payload: unknown): Promise<void> {
    this.start();
    if (this.closed) return;
    const event = this.options.eventOf?.(payload);
    const json = chunkJson(payload) ?? JSON.stringify(payload);
    if (!this.reply.raw.write(`${event ? `event: ${event}\n` : ''}data: ${json}\n\n`)) {
      await flushed(this.reply.raw, streamSettingsOf(this.reply).stallTimeoutMs);
    }
  }

  /** Writes the error envelope as a frame (vLLM: `data: {"error": {...}}`). */
  sendError(err: unknown): Promise<void> {
    return this.send(mapError(err).body);
  }

  /** Writes `data: [DONE]` (unless the stream has no marker) and ends the response. */
  end(): void {
    this.start();
    if (!this.closed && this.options.doneMarker !== false) this.reply.raw.write('data: [DONE]\n\n');
    if (!this.reply.raw.writableEnded) {
      this.reply.raw.end();
      closeWhenStalled(this.reply);
    }
  }

  /**
   * Streams every item of `frames` as a frame, then [DONE]. An error thrown before the first
   * frame is rethrown (the global filter then sends a normal JSON error with its status);
   * after that it becomes an error frame followed by [DONE].
   */
  async pipe(frames: AsyncIterable<unknown>): Promise<void> {
    const iterator = frames[Symbol.asyncIterator]();
    let first: IteratorResult<unknown>;
    try {
      first = await iterator.next();
    } catch (err) {
      if (this.closed) return;
      throw err;
    }
    try {
      if (!first.done) {
        await this.send(first.value);
        for (;;) {
          if (this.closed) break;
          const next = await iterator.next();
          if (next.done) break;
          await this.send(next.value);
        }
      }
    } catch (err) {
      if (!this.closed) await this.sendError(err);
    } finally {
      if (this.closed) await iterator.return?.();
    }
    this.end();
  }
}
