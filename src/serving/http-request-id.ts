// The id base of a generation request: X-Request-Id header, else the body's request_id, else
// the per-request random id (the same one echoed with --enable-request-id-headers).

import type { FastifyRequest } from 'fastify';
import { clientRequestId, requestIdOf } from '../common/request-id';

export function responseIdBase(request: FastifyRequest, bodyRequestId: string | null | undefined): string {
  return clientRequestId(request) ?? bodyRequestId ?? requestIdOf(request);
}
