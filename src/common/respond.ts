// The one POST handler shape of every generation route: SSE frames when `stream` is set,
// else one JSON body. Either way a client that goes away aborts the engine request(s), and one
// that stops reading its response is disconnected after --stream-stall-timeout.
//
// Where a streamed request's time to first token goes, stage by stage: docs/perf/sse.md.

import type { FastifyReply } from 'fastify';
import { sendJson } from './json-response';
import { disconnectSignal, SseStream, type SseOptions } from './sse';

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
  await sendJson(reply, await serving.complete(prepared, disconnectSignal(reply)));
}
