// Server-sent events on the raw Fastify reply (Nest's @Sse only fits GET routes). Frames are
// `data: <json>\n\n`; the stream ends with `data: [DONE]\n\n`. An error after the headers are
// sent becomes a `data: {"error": {...}}` frame. A client that disconnects aborts `signal`,
// which handlers pass to EngineClient.generate so the engine frees the sequence at once.
// Typed event streams (the Responses API) also write an `event: <type>` line per frame and end
// without [DONE], as OpenAI does: `new SseStream(reply, { eventOf: (f) => f.type, doneMarker: false })`.
//
// Usage (common/respond.ts does this for every generation route):
//   const sse = new SseStream(reply);
//   await sse.pipe(serving.stream(prepared, sse.signal));

import type { FastifyReply } from 'fastify';
import { mapError } from './error-mapping';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

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
    return this.signal.aborted || this.reply.raw.writableEnded;
  }

  /** Sends the 200 + event-stream headers. Headers set earlier with reply.header() (CORS, X-Request-Id) are kept. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.reply.hijack();
    const headers = { ...this.reply.getHeaders(), ...SSE_HEADERS };
    this.reply.raw.writeHead(200, headers as Record<string, string>);
  }

  /** Writes one `data: <json>` frame, after an `event: <name>` line when the stream is typed. */
  send(payload: unknown): void {
    this.start();
    if (this.closed) return;
    const event = this.options.eventOf?.(payload);
    this.reply.raw.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(payload)}\n\n`);
  }

  /** Writes the error envelope as a frame (vLLM: `data: {"error": {...}}`). */
  sendError(err: unknown): void {
    this.send(mapError(err).body);
  }

  /** Writes `data: [DONE]` (unless the stream has no marker) and ends the response. */
  end(): void {
    this.start();
    if (!this.closed && this.options.doneMarker !== false) this.reply.raw.write('data: [DONE]\n\n');
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
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
        this.send(first.value);
        for (;;) {
          if (this.closed) break;
          const next = await iterator.next();
          if (next.done) break;
          this.send(next.value);
        }
      }
    } catch (err) {
      if (!this.closed) this.sendError(err);
    } finally {
      if (this.closed) await iterator.return?.();
    }
    this.end();
  }
}
