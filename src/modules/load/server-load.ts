// --enable-server-load-tracking: counts the generation requests in flight (vLLM's
// server_load_metrics, read by GET /load), from request start to the response's end.

import type { FastifyInstance } from 'fastify';

/** The routes vLLM's @load_aware_call counts. */
const LOAD_ROUTES = new Set(['/v1/completions', '/v1/chat/completions', '/v1/chat/completions/batch', '/invocations', '/inference/v1/generate']);

export class ServerLoad {
  private inFlight = 0;

  get value(): number {
    return this.inFlight;
  }

  install(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', (request, reply, done) => {
      if (request.method === 'POST' && LOAD_ROUTES.has(request.routeOptions.url ?? '')) {
        this.inFlight++;
        reply.raw.once('close', () => this.inFlight--);
      }
      done();
    });
  }
}
