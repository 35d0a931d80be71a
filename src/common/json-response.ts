// Large JSON responses (a /tokenize of millions of tokens, completions with many prompts or long
// logprobs) are serialized in pieces with yields to the event loop between them and written
// with backpressure, so producing a 20 MB body never holds the HTTP thread for long. Small
// responses go through Fastify's send() as usual. The text is what JSON.stringify writes.

import type { FastifyReply } from 'fastify';
import { takeTurn } from '../serving/yield-budget';
import { closeWhenStalled, flushed, streamSettingsOf } from './sse';

/** Array items (at any depth) above which a response is written in pieces. */
const LARGE_RESPONSE_ITEMS = 16_384;
/** Primitive array items serialized by one JSON.stringify call. */
const SLICE = 8_192;
/** Object or array items written between two pauses (2,000 logprob entries of 20 keys were ~50 ms). */
const OBJECTS_PER_PAUSE = 256;
/** Text gathered before it is written to the socket. */
const WRITE_CHUNK = 64 * 1024;

/** True when `value` holds more than `limit` array items; stops counting at the limit. */
function hasManyItems(value: unknown, limit: number): boolean {
  let seen = 0;
  const visit = (v: unknown): boolean => {
    if (v === null || typeof v !== 'object') return false;
    if (Array.isArray(v)) {
      seen += v.length;
      if (seen > limit) return true;
      for (const item of v) if (typeof item === 'object' && visit(item)) return true;
      return false;
    }
    for (const key in v) if (visit((v as Record<string, unknown>)[key])) return true;
    return false;
  };
  return visit(value);
}

const isPrimitive = (v: unknown): boolean => v === null || typeof v !== 'object';

class JsonPieces {
  private parts: string[] = [];
  private size = 0;

  constructor(private readonly flush: (text: string) => Promise<void>) {}

  private push(text: string): void {
    this.parts.push(text);
    this.size += text.length;
  }

  private async pause(): Promise<void> {
    if (this.size >= WRITE_CHUNK) await this.drain();
    await takeTurn();
  }

  async drain(): Promise<void> {
    if (this.size === 0) return;
    const text = this.parts.join('');
    this.parts = [];
    this.size = 0;
    await this.flush(text);
  }

  async write(value: unknown): Promise<void> {
    if (isPrimitive(value)) {
      // undefined and functions in an array are written null, as JSON.stringify does (object
      // members holding them are skipped below).
      this.push(JSON.stringify(value) ?? 'null');
      return;
    }
    if (Array.isArray(value)) {
      this.push('[');
      for (let start = 0; start < value.length; start += SLICE) {
        const slice = value.slice(start, start + SLICE);
        if (slice.every(isPrimitive)) {
          this.push((start > 0 ? ',' : '') + JSON.stringify(slice).slice(1, -1));
        } else {
          for (let i = 0; i < slice.length; i++) {
            if (start + i > 0) this.push(',');
            await this.write(slice[i]);
            if ((i + 1) % OBJECTS_PER_PAUSE === 0) await this.pause();
          }
        }
        await this.pause();
      }
      this.push(']');
      return;
    }
    this.push('{');
    let first = true;
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      this.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      await this.write(v);
    }
    this.push('}');
  }
}

/**
 * Sends `body` as a 200 JSON response; large bodies are serialized and written in pieces. Either
 * way a client that stops taking the response is disconnected after --stream-stall-timeout.
 */
export async function sendJson(reply: FastifyReply, body: unknown): Promise<void> {
  if (!hasManyItems(body, LARGE_RESPONSE_ITEMS)) {
    await reply.status(200).send(body);
    closeWhenStalled(reply);
    return;
  }
  reply.hijack();
  const raw = reply.raw;
  const headers = { ...reply.getHeaders(), 'content-type': 'application/json; charset=utf-8' };
  raw.writeHead(200, headers as Record<string, string>);
  const { stallTimeoutMs } = streamSettingsOf(reply);
  const pieces = new JsonPieces(async (text) => {
    if (raw.destroyed) throw new Error('client disconnected');
    if (!raw.write(text) && !(await flushed(raw, stallTimeoutMs))) throw new Error('client disconnected');
  });
  try {
    await pieces.write(body);
    await pieces.drain();
    raw.end();
    closeWhenStalled(reply);
  } catch {
    // The client left (or stalled and was disconnected): nothing more to write.
    if (!raw.destroyed) raw.destroy();
  }
}
