// The one POST handler shape of every generation route: SSE frames when `stream` is set,
// else one JSON body. Either way a client that goes away aborts the engine request(s).

import type { FastifyReply } from 'fastify';
import { disconnectSignal, SseStream, type SseOptions } from '../common/sse';
import type { EngineClient, EngineRequest, OutputKind } from '../engine/types';
import { drain, generateFor, type PromptResult } from './engine-stream';

export interface GenerationServing<P, R, C> {
  complete(prepared: P, signal?: AbortSignal): Promise<R>;
  stream(prepared: P, signal?: AbortSignal): AsyncIterable<C>;
}

export async function respond<P, R, C>(
  reply: FastifyReply,
  serving: GenerationServing<P, R, C>,
  prepared: P,
  stream: boolean,
  sseOptions?: SseOptions,
): Promise<void> {
  if (stream) {
    const sse = new SseStream(reply, sseOptions);
    await sse.pipe(serving.stream(prepared, sse.signal));
    return;
  }
  await reply.status(200).send(await serving.complete(prepared, disconnectSignal(reply)));
}

/**
 * Runs every engine request of a prepared request to the end, concurrently. When one fails
 * (or the client leaves) the others are aborted too, so no orphan keeps the batch busy.
 */
export async function drainAll(
  engine: EngineClient,
  requests: EngineRequest[],
  kinds: OutputKind[],
  signal?: AbortSignal,
): Promise<PromptResult[]> {
  const group = new AbortController();
  const abortGroup = () => group.abort(signal?.reason);
  if (signal?.aborted) abortGroup();
  signal?.addEventListener('abort', abortGroup, { once: true });
  try {
    return await Promise.all(requests.map((r, i) => drain(generateFor(engine, r, group.signal), kinds[i])));
  } catch (err) {
    group.abort(err);
    throw err;
  } finally {
    signal?.removeEventListener('abort', abortGroup);
  }
}
