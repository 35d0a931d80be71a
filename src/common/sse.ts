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
// What a streamed chunk costs the HTTP thread (issue 16; bench/stream-overhead.js: the real app
// over a stand-in engine worker, 64-token streams, the HTTP thread's own CPU; --cpu-prof and perf
// on the served stories260K agree): ~60 us per chunk at 1 stream, ~17-21 us at 32 before the
// changes below; ~35-42 and ~12-15 after them. The socket write is the largest single part: a writev of one ~200-byte frame to a loopback client costs
// 20-22 us at 1 stream (the kernel wakes the reader inside it) and ~5 us at 32. Then each
// request's own work spread over its chunks (parse, routing and hooks, class-validator,
// tokenizing, the add message, metrics: ~0.36 ms a request alone, ~0.6-1.2 ms while the engine's
// threads hold the cores, which is most of the 32-stream bench's TTFT), and the chunk's own path
// (worker message, OutputStream, the generators, the chunk object, JSON, SSE and chunked framing:
// ~2.5 us).
// Taken: (1) the chunk's JSON from a per-response template (serving/chunk-template.ts: the
// constant head written once, the choice from its known shape; byte-identical to
// JSON.stringify), ~1.2 us a chunk less; (2) a one-prompt completion stream read without
// mergeStreams' generator between (~0.6 us); (3) the engine's step messages taken together when
// several wait (engine/worker/spawn-worker.ts has its figures: fewer writev calls, within the
// noise on served tok/s), so the frames of the steps that queued up while this thread was busy
// leave in one writev per socket. bench/stream-overhead, 3 interleaved runs of 2 rounds each,
// main's build against (1) and (3): 32 streams 16.5-18.0 -> 12.3-15.0 us a chunk, 1 stream
// 37.9-46.3 -> 35.5-42.1. Served stories260K, main's build against all three (4 alternating
// rounds, 64 tokens, 512 requests at 32 streams and 150 at 1; the server's main thread from
// /proc, writev calls from perf stat): at 32 streams 16.5-18.9 -> 13.1-15.3 us of HTTP-thread
// CPU a token, writev calls per token 1.00 -> 0.67-0.83, tok/s higher in all 4 rounds
// (23.1k / 26.0k / 23.9k / 15.6k -> 25.7k / 29.0k / 26.3k / 30.0k); at 1 stream tok/s within the
// rounds' noise either way (4254 / 5710 / 5936 / 4561 -> 4604 / 5214 / 5556 / 4507).
// Unlike the cork below, nothing is held back: the outputs were already here, and a stream that
// stops reading is paused as before (test/e2e/backpressure: +0.0 MiB in the 2 s after, 5 runs).
// Not taken: one writev per connection per event-loop turn (each socket corked at its first frame
// of the turn, all uncorked in one setImmediate), so the frames of several steps handled in one
// turn go out together. Served stories260K (perf stat on the server): writev calls per token
// 1.01 -> 0.47-0.92 at 32 streams, 1.01 -> 0.49-0.95 at 1; bench/stream-overhead at 32 streams,
// HTTP-thread CPU per chunk 18.3 -> 16.8 us (median of 5 interleaved runs) and 21.3 -> 19.9
// (median of 4), 1 stream unchanged; served tok/s at 32 streams, 6 alternating rounds, median
// ~13.4k -> ~16.4k with rounds from 9.8k to 22.2k either way. But with it, test/e2e/backpressure
// saw the server's RSS grow 20-51 MiB in the 2 s after its stalled streams were paused in 6 of
// 15 runs (main's build: 0 of 4, this one without the cork 0 of 5, growth <= 0.2 MiB), also when
// sockets with unsent bytes were left uncorked: a bounded-memory guarantee is worth more than
// ~2 us a chunk.
// Not taken either: each frame written straight to the socket as one pre-framed HTTP chunk
// (skipping OutgoingMessage's four _send calls; byte-identical): 6-11 us less CPU a frame in a
// per-frame bench (server and client together), but served single-stream TPOT on stories260K
// within the noise (5 interleaved pairs, 1.16-1.51 ms either way), and it has to read Node's
// private OutgoingMessage fields to know when the bypass is safe.
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
    let lastProgress = Date.now();
    const check = stallTimeoutMs > 0 ? setInterval(() => {
      const unsent = unsentBytes(raw);
      if (unsent < lastUnsent) lastProgress = Date.now();
      lastUnsent = unsent;
      if (Date.now() - lastProgress >= stallTimeoutMs) {
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
