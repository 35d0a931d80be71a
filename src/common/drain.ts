// Draining on SIGTERM/SIGINT: the listener stays open while the requests in flight finish, and
// every new request (on a new connection or a kept-alive one) is answered 503 with
// `Connection: close` (lingering, for a body still arriving) and Retry-After instead of a reset, so a load balancer moves it elsewhere
// at once. /health answers 503 too, which takes the instance out of rotation.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { buildErrorBody } from '../serving/openai-error';
import { closeAfterAnswer } from './lingering-close';

/** Seconds a client is told to wait before retrying a refused request. */
const DRAIN_RETRY_AFTER_SECONDS = 1;

export class HttpDrain {
  private draining = false;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];

  get isDraining(): boolean {
    return this.draining;
  }

  /** Requests accepted and not yet answered (streams included). */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  install(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', (_request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      if (this.draining) {
        closeAfterAnswer(reply);
        void reply
          .status(503)
          .header('retry-after', String(DRAIN_RETRY_AFTER_SECONDS))
          .header('content-type', 'application/json')
          .send(buildErrorBody('The server is shutting down.', 503));
        return;
      }
      this.inFlight++;
      // 'close' fires once per response, finished or aborted, hijacked (SSE) or not.
      reply.raw.once('close', () => this.finished());
      done();
    });
  }

  /** Stops accepting work: new requests get 503 from now on. */
  start(): void {
    this.draining = true;
  }

  /** Resolves once no accepted request is left. */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private finished(): void {
    this.inFlight--;
    if (this.inFlight > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

const drains = new WeakMap<FastifyInstance, HttpDrain>();

/** Installs the drain on `fastify` (first onRequest hook: a draining server does no other work). */
export function installDrain(fastify: FastifyInstance): HttpDrain {
  const drain = new HttpDrain();
  drain.install(fastify);
  drains.set(fastify, drain);
  return drain;
}

/** The drain createApp installed on this instance. */
export function drainOf(fastify: FastifyInstance): HttpDrain {
  const drain = drains.get(fastify);
  if (!drain) throw new Error('no drain installed on this Fastify instance');
  return drain;
}
