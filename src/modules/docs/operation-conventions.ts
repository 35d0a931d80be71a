// What every operation of the document gets without per-route work: security (or `security: []`
// for @Public() routes), the error responses, and the standard OpenAPI forms of the
// x-ortllm-* extensions recorded by src/common/api-docs.decorators.ts (event streams, body
// examples). New routes are covered as soon as they are registered.

import { getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject, RequestBodyObject, ResponseObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { BODY_EXAMPLE_EXTENSION, EVENT_STREAM_EXTENSION, SERVED_MODEL, type EventStreamDoc } from '../../common/api-docs.decorators';
import { ErrorResponse, UnauthorizedResponse } from '../../common/error-response.dto';
import { PUBLIC_OPENAPI_EXTENSION } from '../../common/public.decorator';

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

/** @ApiEventStream: the 200 response also has `text/event-stream` content with the frame schema. */
export function documentEventStream(operation: Operation): void {
  const doc = operation[EVENT_STREAM_EXTENSION] as EventStreamDoc | undefined;
  if (!doc) return;
  delete operation[EVENT_STREAM_EXTENSION];
  const ok = operation.responses['200'] as ResponseObject | undefined;
  if (!ok) throw new Error(`@ApiEventStream on ${operation.operationId}, which documents no 200 response`);
  const refs = doc.refs.map(($ref) => ({ $ref }));
  ok.content = { ...ok.content, 'text/event-stream': { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } };
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
