// Maps anything thrown while serving a request to (status, envelope). Shared by the Nest
// exception filter (which also receives body-parsing failures through Nest's Fastify error
// handler) and SSE error frames, so every path answers the same way.

import { HttpException, Logger } from '@nestjs/common';
import { apiErrorOf, buildErrorBody, httpPhrase, type ApiError, type OpenAIErrorBody } from '../serving/openai-error';

const logger = new Logger('Errors');

/** Turns an exception into the status and OpenAI error envelope sent to the client. */
export function mapError(err: unknown): ApiError {
  const apiError = apiErrorOf(err);
  if (apiError) return apiError;
  if (err instanceof HttpException) return fromHttpException(err);
  // Unknown: log the stack here, never send it.
  logger.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  return { status: 500, body: buildErrorBody('Internal server error', 500) };
}

function fromHttpException(err: HttpException): ApiError {
  const status = err.getStatus();
  const response = err.getResponse();
  // A ValidationPipe/exceptionFactory may already have built the envelope.
  if (typeof response === 'object' && response !== null && 'error' in response) {
    const inner = (response as OpenAIErrorBody).error;
    if (inner && typeof inner === 'object' && typeof inner.message === 'string') {
      return { status, body: buildErrorBody(inner.message, status, inner.param ?? null, inner.type) };
    }
  }
  let message = err.message;
  if (typeof response === 'object' && response !== null && 'message' in response) {
    const m = (response).message;
    message = Array.isArray(m) ? m.join('; ') : String(m);
  }
  // FastAPI's HTTPException handler in vLLM uses the reason phrase as `type`.
  return { status, body: buildErrorBody(message, status, null, httpPhrase(status)) };
}
