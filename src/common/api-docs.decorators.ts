// Route-level OpenAPI declarations that @nestjs/swagger has no decorator for. Each one records an
// `x-ortllm-*` extension on the operation; the docs module (src/modules/docs/) turns it into
// standard OpenAPI and removes the extension. A new route declares:
//
//   @Post('v1/responses')
//   @ApiOperation({ summary: 'Create a response' })
//   @ApiOkResponse({ type: ResponsesResponseDto, description: '…' })
//   @ApiEventStream(ResponsesStreamEventDto)                    // when `stream: true` sends SSE
//   @ApiBodyExample({ model: SERVED_MODEL, input: 'Hello' })    // Swagger UI's pre-filled body
//
// Error responses, security and public schema names need nothing per route.

import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtension, ApiExtraModels, getSchemaPath } from '@nestjs/swagger';

export const EVENT_STREAM_EXTENSION = 'x-ortllm-event-stream';
export const BODY_EXAMPLE_EXTENSION = 'x-ortllm-body-example';

/**
 * Stands for the served model name in a body example: the served /openapi.json shows the
 * server's first --served-model-name, the committed openapi/openapi.json the name `npm start`
 * serves without a model (ortllm-dummy), so every example runs verbatim against its server.
 */
export const SERVED_MODEL = '{{served_model_name}}';

export interface EventStreamDoc {
  /** `$ref`s of the frame schemas (one, or the alternatives of a union of event types). */
  refs: string[];
}

/**
 * The operation answers `text/event-stream` (next to its JSON response) when the request asks
 * for a stream: each `data:` frame is one of `frames` (JSON), an error arrives as a
 * `data: {"error": …}` frame, and the stream ends with `data: [DONE]`.
 */
export function ApiEventStream(...frames: [Type, ...Type[]]): MethodDecorator {
  const doc: EventStreamDoc = { refs: frames.map((frame) => getSchemaPath(frame)) };
  return applyDecorators(ApiExtraModels(...frames), ApiExtension(EVENT_STREAM_EXTENSION, doc));
}

/**
 * The request body example (JSON) that Swagger UI pre-fills and "Try it out" sends: it must
 * succeed as it stands against the server serving the spec (a test POSTs every one). Write
 * SERVED_MODEL for the model name.
 */
export function ApiBodyExample(example: Record<string, unknown>): MethodDecorator {
  return ApiExtension(BODY_EXAMPLE_EXTENSION, { value: example });
}
