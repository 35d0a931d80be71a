// Errors the engine raises before a request enters the batch. The serving layer maps them to
// OpenAI-style error envelopes (400 with `param`, 500 otherwise), without the engine knowing HTTP.

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

/** The engine sleeps (POST /sleep) and refuses work until woken (POST /wake_up): HTTP 503. */
export class EngineSleepingError extends Error {
  constructor() {
    super('The engine is sleeping: POST /wake_up before sending requests.');
    this.name = 'EngineSleepingError';
  }
}

/**
 * A request reached the engine core breaking a rule the serving layer checks for every request
 * (a bug upstream): the core refuses it, and the client gets an internal error, not a 400.
 */
export class EngineInvariantError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineInvariantError';
  }
}

/** The engine cannot serve (dead worker, runner failure at start-up). */
export class EngineDeadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineDeadError';
  }
}

/**
 * The engine already holds --max-num-queued-reqs sequences (waiting + running): the request is
 * refused before it queues (503 with Retry-After), so an overloaded server sheds load instead of
 * growing its queue without bound.
 */
export class EngineOverloadedError extends Error {
  constructor(
    message: string,
    /** Seconds the client is told to wait before retrying. */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'EngineOverloadedError';
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

/**
 * A prompt found to have at least `atLeast` tokens, past --max-model-len, after tokenizing only a
 * prefix of it (engine/text/bounded-encode.ts): the serving layer answers vLLM's 400.
 */
export class PromptTooLongError extends Error {
  constructor(readonly atLeast: number) {
    super(`The prompt has at least ${atLeast} tokens.`);
    this.name = 'PromptTooLongError';
  }
}
