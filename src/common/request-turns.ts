// Requests that carry a body wait their turn on the HTTP thread (serving/yield-budget.ts) before
// the body is read, parsed and validated, so a burst of a thousand requests is taken in a few
// milliseconds at a time. Body-less requests (/health, /metrics, GETs) go on at once.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { takeTurn } from '../serving/yield-budget';

function carriesBody(request: FastifyRequest): boolean {
  const { headers } = request.raw;
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

export function installRequestTurns(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    const wait = carriesBody(request) ? takeTurn() : undefined;
    if (wait === undefined) done();
    else void wait.then(() => done());
  });
}
