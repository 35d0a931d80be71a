// The one POST handler shape of every generation route: SSE frames when `stream` is set,
// else one JSON body. Either way a client that goes away aborts the engine request(s), and one
// that stops reading its response is disconnected after --stream-stall-timeout.
//
// Where a lone streamed request's time to first token goes (issue 16; stories260K served,
// /v1/completions with a ~5-token prompt, 64 tokens, 250-300 sequential requests a run on a
// keep-alive socket; temporary hrtime stamps in the client, the HTTP thread and the engine
// worker, one clock). p50 ms over 4-6 runs on the shared 2-core machine:
// - client send -> the 'request' event (the client's own request, loopback, the HTTP thread's
//   wake, llhttp) 0.25-0.34
// - -> Fastify's first onRequest hook 0.07-0.10; the other onRequest hooks 0.02-0.04
// - the body read and parsed 0.22-0.24 (0.13-0.17 since common/body/json-body-parser.ts reads
//   a body that came with its headers at once)
// - preHandler -> the controller (Nest's pipeline; the admission, unknown-field and validation
//   pipes) 0.10-0.17
// - prepare: checks 0.03, tokenizing 0.09 (chat: template and tokenizing 0.24), sampling
//   params and engine requests 0.08
// - -> connection.add (this function, the SSE stream, the generators, the engine's checks)
//   0.06-0.08
// - postMessage -> the worker handles 'add' 0.09-0.12; -> its step starts 0.08-0.11
// - the first step (prefill, sample, detokenize) 0.38-0.50
// - the worker's message -> the HTTP thread takes it 0.04-0.05 (p90 0.07-0.17)
// - -> the first frame written (generators, headers, chunk JSON) 0.06-0.09
// - written -> the client has the first text 0.10-0.19 (p90 1.4-2.3: the client waits for a
//   core while the engine's threads run the next steps)
// TTFT p50 1.8-2.6 ms (llama-server: 1.5-1.6 ms in the bench, with its ~37-token prompts, ours
// 2.5-3.2 there). The HTTP thread's CPU per request is ~0.85-1.0 ms with a 1-token stream and
// ~33 us per further chunk (/proc schedstat); perf on it shows a long tail, no single large part:
// socket writes and wake-ups ~8%, tokenizing ~5%, Fastify and Nest ~15%, Fastify's per-request
// AsyncResource.bind in its content-type parser ~2.5% (Node's deprecation wrappers, ~20 us),
// metrics ~5%. Measured and not taken: a 3 ms pause between requests (so the finished request's
// 'finish' work, the access log line and the HTTP metrics, ~0.3 ms wall of mostly waiting for a
// core, never overlaps the next request's intake) left TTFT the same or worse (2.13 / 2.09 ->
// 2.33 / 2.76 ms p50): idle cores wake slower; so deferring that work would not pay either.

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
