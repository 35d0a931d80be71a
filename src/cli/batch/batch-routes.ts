// Which batch-file `url`s run-batch serves, one entry per endpoint. Each handler answers one
// line's body through the app's own route (validation, serving, error envelope), so a batch
// line's output is what the same request over HTTP returns.

import type { FastifyInstance } from 'fastify';

export interface RouteReply {
  statusCode: number;
  body: unknown;
}

export type BatchHandler = (app: FastifyInstance, body: Record<string, unknown>, headers: Record<string, string>) => Promise<RouteReply>;

/** POSTs the body to `url` in-process (Fastify inject: no socket, same pipeline as HTTP). */
const viaRoute =
  (url: string): BatchHandler =>
  async (app, body, headers) => {
    const res = await app.inject({ method: 'POST', url, payload: body, headers: { 'content-type': 'application/json', ...headers } });
    let parsed: unknown = null;
    try {
      parsed = res.json();
    } catch {
      parsed = res.body;
    }
    return { statusCode: res.statusCode, body: parsed };
  };

export const BATCH_ROUTES: Record<string, BatchHandler> = {
  '/v1/chat/completions': viaRoute('/v1/chat/completions'),
  '/v1/completions': viaRoute('/v1/completions'),
};
