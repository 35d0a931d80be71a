// Which batch-file `url`s run-batch serves, one entry per endpoint (vLLM's run_batch: chat,
// embeddings, score, rerank; completions too). Each handler answers one line's body through the
// app's own route (validation, serving, error envelope), so a batch line's output is what the same
// request over HTTP returns. A route the served model does not register (embeddings on a
// generation model) answers vLLM's "The model does not support … API".

import type { FastifyInstance } from 'fastify';

export interface RouteReply {
  statusCode: number;
  body: unknown;
}

export type BatchHandler = (app: FastifyInstance, body: Record<string, unknown>, headers: Record<string, string>) => Promise<RouteReply>;

/** POSTs the body to `url` in-process (Fastify inject: no socket, same pipeline as HTTP); `api` names the endpoint in vLLM's refusal. */
const viaRoute =
  (url: string, api: string): BatchHandler =>
  async (app, body, headers) => {
    if (!app.hasRoute({ method: 'POST', url })) return { statusCode: 400, body: `The model does not support ${api}` };
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
  '/v1/chat/completions': viaRoute('/v1/chat/completions', 'Chat Completions API'),
  '/v1/completions': viaRoute('/v1/completions', 'Completions API'),
  '/v1/embeddings': viaRoute('/v1/embeddings', 'Embeddings API'),
  '/score': viaRoute('/score', 'Scores API'),
  '/v1/score': viaRoute('/v1/score', 'Scores API'),
  '/rerank': viaRoute('/rerank', 'Rerank API'),
  '/v1/rerank': viaRoute('/v1/rerank', 'Rerank API'),
  '/v2/rerank': viaRoute('/v2/rerank', 'Rerank API'),
};
