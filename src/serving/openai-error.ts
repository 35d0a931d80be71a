// The one builder for vLLM's error envelope: {"error": {message, type, param, code}}, where
// `code` is the HTTP status as an int (vLLM >= 0.10.1). Used by the global exception filter,
// the ValidationPipe's exceptionFactory and mid-stream SSE error frames.

import { STATUS_CODES } from 'node:http';
import { EngineDeadError, EngineOverloadedError, EngineSleepingError, RequestValidationError } from '../engine/errors';

interface OpenAIErrorInfo {
  message: string;
  type: string;
  param: string | null;
  code: number;
}

export interface OpenAIErrorBody {
  error: OpenAIErrorInfo;
}

/** An error as the client receives it: HTTP status, envelope and any headers it needs (Retry-After). */
export interface ApiError {
  status: number;
  body: OpenAIErrorBody;
  headers?: Record<string, string>;
}

/** vLLM's `type` for each status it produces from its own error classes. */
const TYPE_BY_STATUS: Record<number, string> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  422: 'UnprocessableEntityError',
  500: 'InternalServerError',
  501: 'NotImplementedError',
  503: 'ServiceUnavailableError',
};

/** The `type` vLLM sends for a status; falls back to the HTTP reason phrase (as FastAPI's HTTPException does). */
function errorTypeForStatus(status: number): string {
  return TYPE_BY_STATUS[status] ?? httpPhrase(status);
}

/** HTTP reason phrase, e.g. 400 -> "Bad Request" (the `type` of HTTPException / validation errors). */
export function httpPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

/** Builds the envelope. `type` defaults to vLLM's type for the status. */
export function buildErrorBody(
  message: string,
  status: number,
  param: string | null = null,
  type: string = errorTypeForStatus(status),
): OpenAIErrorBody {
  return { error: { message, type, param, code: status } };
}

/**
 * Throw this from controllers/services to answer with a given status and envelope. The global
 * filter renders it; SSE helpers render it as an error frame.
 *   throw new OpenAIHttpError(404, 'The model `x` does not exist.')
 *   throw OpenAIHttpError.badRequest('max_tokens must be at least 1', 'max_tokens')
 */
export class OpenAIHttpError extends Error {
  readonly type: string;
  /** Extra response headers (e.g. Retry-After on a 503). */
  headers: Record<string, string> | undefined;

  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    type?: string,
  ) {
    super(message);
    this.name = 'OpenAIHttpError';
    this.type = type ?? errorTypeForStatus(status);
  }

  /** 400 BadRequestError (vLLM's VLLMValidationError / ValueError). */
  static badRequest(message: string, param: string | null = null): OpenAIHttpError {
    return new OpenAIHttpError(400, message, param);
  }

  /** 404 NotFoundError: vLLM's message for an unknown model, then the names this server answers to. */
  static modelNotFound(model: string, servedNames: readonly string[] = []): OpenAIHttpError {
    const served = servedNames.length > 0 ? ` Served model names: ${servedNames.map((n) => `\`${n}\``).join(', ')}.` : '';
    return new OpenAIHttpError(404, `The model \`${model}\` does not exist.${served}`, 'model');
  }

  /** 501 NotImplementedError (a feature ortllm does not support). */
  static notImplemented(message: string): OpenAIHttpError {
    return new OpenAIHttpError(501, message);
  }

  toBody(): OpenAIErrorBody {
    return buildErrorBody(this.message, this.status, this.param, this.type);
  }
}

/**
 * The status and envelope of an error raised by the serving layer or the engine (validation
 * 400, dead engine 500, overloaded engine 503); null for anything else, which the HTTP layer maps itself.
 */
export function apiErrorOf(err: unknown): ApiError | null {
  if (err instanceof OpenAIHttpError) return { status: err.status, body: err.toBody(), ...(err.headers ? { headers: err.headers } : {}) };
  if (err instanceof RequestValidationError) return { status: 400, body: buildErrorBody(err.message, 400, err.param) };
  if (err instanceof EngineSleepingError) return { status: 503, body: buildErrorBody(err.message, 503) };
  if (err instanceof EngineDeadError) return { status: 500, body: buildErrorBody(err.message, 500) };
  if (err instanceof EngineOverloadedError) {
    return { status: 503, body: buildErrorBody(err.message, 503), headers: { 'retry-after': String(err.retryAfterSeconds) } };
  }
  return null;
}
