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

/** The engine sleeps (POST /sleep) and refuses work until woken (POST /wake_up): HTTP 503. */
export class EngineSleepingError extends Error {
  constructor() {
    super('The engine is sleeping: POST /wake_up before sending requests.');
    this.name = 'EngineSleepingError';
  }
}

/** The engine cannot serve (dead worker, runner failure at start-up). */
export class EngineDeadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineDeadError';
  }
}
