// The path of a request (after --root-path rewriting), without its query string.

import type { FastifyRequest } from 'fastify';

export function pathOf(request: FastifyRequest): string {
  const url = request.url;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}
