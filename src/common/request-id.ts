// X-Request-Id (vLLM's x_request_id middleware): the incoming header is always read and is the
// base of the engine's request id (chat: `chatcmpl-<id>`, completions: `cmpl-<id>`,
// generate: `generate-tokens-<id>`). With --enable-request-id-headers the response echoes it,
// or a fresh uuid4 hex when the client sent none (the same id the handlers then use).

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requestIdBase } from '../serving/ids';

const REQUEST_ID_HEADER = 'x-request-id';

const ids = new WeakMap<object, string>();

/** The client's X-Request-Id if it sent one. */
function clientRequestId(request: FastifyRequest): string | null {
  const header = request.headers[REQUEST_ID_HEADER];
  const value = Array.isArray(header) ? header[0] : header;
  return value && value.length > 0 ? value : null;
}

/** The id of this HTTP request (logs, the echoed header): the X-Request-Id header, else one random id per request. */
export function requestIdOf(request: FastifyRequest): string {
  const cached = ids.get(request.raw);
  if (cached !== undefined) return cached;
  const id = requestIdBase(clientRequestId(request), null);
  ids.set(request.raw, id);
  return id;
}

/** With --enable-request-id-headers, sets X-Request-Id on every response (SSE included). */
export function installRequestIdEcho(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, requestIdOf(request));
    done();
  });
}

/**
 * The id base of a generation request (serving's requestIdBase rule), falling back to this HTTP
 * request's random id, so the id echoed with --enable-request-id-headers and the response id agree.
 */
export function responseIdBase(request: FastifyRequest, bodyRequestId: string | null | undefined): string {
  return requestIdBase(clientRequestId(request), bodyRequestId, () => requestIdOf(request));
}
