// What every operation of the document gets without per-route work: security (or `security: []`
// for @Public() routes), the error responses, and the standard OpenAPI forms of the
// x-ortllm-* extensions recorded by src/common/api-docs.decorators.ts (event streams, body
// examples). New routes are covered as soon as they are registered.

import { getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject, RequestBodyObject, ResponseObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { BODY_EXAMPLE_EXTENSION, EVENT_STREAM_EXTENSION, SERVED_MODEL, type EventStreamDoc } from '../../common/api-docs.decorators';
import { ErrorResponse, UnauthorizedResponse } from '../../common/error-response.dto';
import { PUBLIC_OPENAPI_EXTENSION } from '../../common/public.decorator';
import { publicSchemaName } from './schema-conventions';

type Operation = OperationObject & Record<string, unknown>;

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Every operation of the document with its method and path (for error messages). */
export function operationsOf(document: OpenAPIObject): { method: string; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.has(method))
      .map(([method, operation]) => ({ method, path, operation: operation as Operation })),
  );
}

const errorEnvelope = (description: string): ResponseObject => ({
  description,
  content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorResponse) } } },
});

const UNAUTHORIZED: ResponseObject = {
  description: 'Missing or wrong API key (this body is a plain string, not the error envelope).',
  content: { 'application/json': { schema: { $ref: getSchemaPath(UnauthorizedResponse) } } },
};
const CLIENT_ERROR = errorEnvelope(
  'Invalid request: 400 (validation; `param` names the field), 404 (unknown model), 413 (body over --max-request-body-size), …',
);
const SERVER_ERROR = errorEnvelope('Server error: 500 (engine failure), 501 (not implemented), …');

/** @Public() routes need no key (`security: []`); the others document the 401 body. All get 4XX/5XX. */
export function documentSecurityAndErrors(operation: Operation): void {
  if (PUBLIC_OPENAPI_EXTENSION in operation) {
    delete operation[PUBLIC_OPENAPI_EXTENSION];
    operation.security = [];
  } else {
    operation.responses['401'] ??= UNAUTHORIZED;
  }
  operation.responses['4XX'] ??= CLIENT_ERROR;
  operation.responses['5XX'] ??= SERVER_ERROR;
}

/** Where the 200 response names the schema of an event stream's `data:` frames. */
export const EVENT_STREAM_FRAMES = 'x-event-stream';

/**
 * @ApiEventStream: the 200 response describes the `text/event-stream` answer and names its frame
 * schema under `x-event-stream`, not as a second content type: generators type a response as the
 * union of its content types, which would hide the JSON answer's fields (`choices[0].message`).
 */
export function documentEventStream(operation: Operation): void {
  const doc = operation[EVENT_STREAM_EXTENSION] as EventStreamDoc | undefined;
  if (!doc) return;
  delete operation[EVENT_STREAM_EXTENSION];
  const ok = operation.responses['200'] as (ResponseObject & Record<string, unknown>) | undefined;
  if (!ok) throw new Error(`@ApiEventStream on ${operation.operationId}, which documents no 200 response`);
  const refs = doc.refs.map(($ref) => ({ $ref }));
  const names = doc.refs.map((ref) => `\`${publicSchemaName(ref.slice(ref.lastIndexOf('/') + 1))}\``).join(' or ');
  ok.description = `${ok.description ?? ''}\n\nFrames of the event stream (\`stream: true\`): ${names} (see Schemas).`;
  ok[EVENT_STREAM_FRAMES] = { schema: refs.length === 1 ? refs[0] : { oneOf: refs } };
}

/** @ApiBodyExample: the JSON body's `example`, with SERVED_MODEL replaced by `modelName`. */
export function documentBodyExample(operation: Operation, modelName: string): void {
  const doc = operation[BODY_EXAMPLE_EXTENSION] as { value: unknown } | undefined;
  if (!doc) return;
  delete operation[BODY_EXAMPLE_EXTENSION];
  const json = (operation.requestBody as RequestBodyObject | undefined)?.content['application/json'];
  if (!json) throw new Error(`@ApiBodyExample on ${operation.operationId}, which has no JSON request body`);
  json.example = withModelName(doc.value, modelName);
}

function withModelName(value: unknown, modelName: string): unknown {
  if (value === SERVED_MODEL) return modelName;
  if (Array.isArray(value)) return value.map((item) => withModelName(item, modelName));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withModelName(item, modelName)]));
  }
  return value;
}
