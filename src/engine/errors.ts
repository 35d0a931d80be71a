// Errors the engine raises before a request enters the batch. The HTTP layer maps them
// to OpenAI-style error envelopes (400 with `param`), without the engine knowing HTTP.

export class RequestValidationError extends Error {
  constructor(
    message: string,
    /** Name of the offending request field, as the client sent it (e.g. 'max_tokens'). */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'RequestValidationError';
  }
}

/** The engine cannot serve (dead worker, runner failure at start-up). */
export class EngineDeadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineDeadError';
  }
}

/** The request asks for what the served model's runner does not do (generation vs pooling). */
export function wrongRunnerError(kind: 'generate' | 'encode'): RequestValidationError {
  return new RequestValidationError(
    kind === 'generate'
      ? 'This model is served for pooling (embeddings, classification, scores); it does not generate text.'
      : 'This model generates text; it has no pooling (embedding or classification) output.',
    null,
  );
}
