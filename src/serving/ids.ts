// Response ids and timestamps as vLLM builds them: the X-Request-Id header wins over the body's
// request_id, and a fresh uuid (hex, no dashes) is used when neither is given.

import { randomRequestId } from '../common/request-id';

export type ResponseIdPrefix = 'cmpl' | 'chatcmpl' | 'resp';

/** OpenAI's responses are `resp_…`; completions and chat use a dash. */
const SEPARATOR: Record<ResponseIdPrefix, string> = { cmpl: '-', chatcmpl: '-', resp: '_' };

/** The id base a request is known by: header, then body request_id, then random. */
export function requestIdBase(headerId: string | null | undefined, bodyId: string | null | undefined): string {
  if (headerId) return headerId;
  if (bodyId) return bodyId;
  return randomRequestId();
}

export function responseId(prefix: ResponseIdPrefix, base: string): string {
  return `${prefix}${SEPARATOR[prefix]}${base}`;
}

/** Seconds since the epoch, as OpenAI's `created`. */
export function createdNow(): number {
  return Math.floor(Date.now() / 1000);
}
