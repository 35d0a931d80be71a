// Request and response ids as vLLM builds them, and response timestamps. The one rule for the id
// base lives here (requestIdBase); the HTTP layer feeds it the header (common/request-id.ts).

import { randomUUID } from 'node:crypto';

/** A fresh id like Python's uuid4().hex. */
export function randomRequestId(): string {
  return randomUUID().replace(/-/g, '');
}

export type ResponseIdPrefix = 'cmpl' | 'chatcmpl' | 'resp';

/** OpenAI's responses are `resp_…`; completions and chat use a dash. */
const SEPARATOR: Record<ResponseIdPrefix, string> = { cmpl: '-', chatcmpl: '-', resp: '_' };

/**
 * The id base a request is known by (vLLM's _base_request_id): the X-Request-Id header, else
 * the body's request_id, else `fallback()` (a fresh random id unless the caller has one).
 */
export function requestIdBase(
  headerId: string | null | undefined,
  bodyId: string | null | undefined,
  fallback: () => string = randomRequestId,
): string {
  return headerId || bodyId || fallback();
}

export function responseId(prefix: ResponseIdPrefix, base: string): string {
  return `${prefix}${SEPARATOR[prefix]}${base}`;
}

/** Seconds since the epoch, as OpenAI's `created`. */
export function createdNow(): number {
  return Math.floor(Date.now() / 1000);
}
