// The conventions every operation and schema of the generated document follows without per-route
// work (src/modules/docs/): public schema names, descriptions, summaries, error responses,
// examples, event streams, nullable unions. Checked on the document `npm run openapi` writes, so
// a new route or DTO that misses one fails here with its name.

import { renderOpenApiSpec } from '../../../../src/cli/write-openapi';
import { DUMMY_MODEL_NAME } from '../../../../src/config/server-config';

type Json = Record<string, any>;

let spec: Json;
beforeAll(async () => {
  spec = JSON.parse(await renderOpenApiSpec());
}, 60_000);

const operations = (): { id: string; operation: Json }[] =>
  Object.entries(spec.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).map(([method, operation]) => ({ id: `${method.toUpperCase()} ${path}`, operation })),
  );

/** Every object under `value` with its JSON pointer. */
function* objects(value: unknown, pointer = '#'): Generator<[string, Json]> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* objects(item, `${pointer}/${i}`);
  } else if (value && typeof value === 'object') {
    yield [pointer, value];
    for (const [key, child] of Object.entries(value)) yield* objects(child, `${pointer}/${key}`);
  }
}

describe('the OpenAPI document', () => {
  it('publishes schemas under public names, and every $ref resolves', () => {
    const names = Object.keys(spec.components.schemas);
    expect(names.filter((name) => name.endsWith('Dto'))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['CompletionRequest', 'CompletionResponse', 'ChatCompletionRequest', 'ChatCompletionResponse', 'UsageInfo', 'ErrorResponse']));
    const dangling = [...objects(spec)]
      .filter(([, node]) => typeof node.$ref === 'string')
      .map(([pointer, node]) => [pointer, node.$ref as string])
      .filter(([, ref]) => !(ref.replace('#/components/schemas/', '') in spec.components.schemas));
    expect(dangling).toEqual([]);
  });

  it('describes every property of every schema', () => {
    const undescribed = [...objects(spec.components.schemas)].flatMap(([pointer, node]) =>
      node.properties && typeof node.properties === 'object' && !Array.isArray(node.properties)
        ? Object.entries(node.properties as Json)
            .filter(([, property]) => !property.description && !property.$ref)
            .map(([name]) => `${pointer}/properties/${name}`)
        : [],
    );
    expect(undescribed).toEqual([]);
  });

  it('gives every operation a summary, 4XX and 5XX error envelopes, and 401 or security: []', () => {
    for (const { id, operation } of operations()) {
      expect([id, typeof operation.summary]).toEqual([id, 'string']);
      for (const status of ['4XX', '5XX']) {
        expect([id, status, operation.responses[status]?.content['application/json'].schema.$ref]).toEqual([id, status, '#/components/schemas/ErrorResponse']);
      }
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      expect([id, open || operation.responses['401']?.content['application/json'].schema.$ref]).toEqual([
        id,
        open || '#/components/schemas/UnauthorizedResponse',
      ]);
    }
    expect(JSON.stringify(spec)).not.toMatch(/"x-ortllm-/);
  });

  it('has a body example on every JSON request body, naming the model `npm start` serves', () => {
    for (const { id, operation } of operations()) {
      const json = operation.requestBody?.content['application/json'];
      if (!json) continue;
      expect([id, typeof json.example]).toEqual([id, 'object']);
      if ('model' in json.example) expect([id, json.example.model]).toEqual([id, DUMMY_MODEL_NAME]);
    }
    expect(JSON.stringify(spec)).not.toContain('{{served_model_name}}');
  });

  it('names the event-stream frame schema under x-event-stream, leaving JSON the only 200 content of streaming operations', () => {
    const frames = Object.fromEntries(
      operations()
        .filter(({ operation }) => operation.responses['200']?.['x-event-stream'])
        .map(({ id, operation }) => [id, operation.responses['200']['x-event-stream'].schema]),
    );
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    expect(frames).toStrictEqual({
      'POST /v1/completions': ref('CompletionStreamResponse'),
      'POST /v1/chat/completions': ref('ChatCompletionStreamResponse'),
      'POST /inference/v1/generate': ref('GenerateStreamResponse'),
      'POST /v1/audio/transcriptions': ref('SpeechStreamResponse'),
      'POST /v1/audio/translations': ref('SpeechStreamResponse'),
      // Typed events: every frame is one ResponsesStreamEvent (its `type` is the event: line).
      'POST /v1/responses': ref('ResponsesStreamEvent'),
      // Several frame types (the routes /invocations forwards to): one of them.
      'POST /invocations': { oneOf: [ref('ChatCompletionStreamResponse'), ref('CompletionStreamResponse')] },
    });
    const completions = spec.paths['/v1/completions'].post.responses['200'];
    expect(Object.keys(completions.content)).toEqual(['application/json']);
    expect(completions.content['application/json'].schema.$ref).toBe('#/components/schemas/CompletionResponse');
    expect(completions.description).toContain('`CompletionStreamResponse`');
    const withStreamContent = operations().filter(({ operation }) => operation.responses['200']?.content?.['text/event-stream']);
    expect(withStreamContent.map(({ id }) => id)).toEqual([]);
  });

  it('states request-field defaults in the description, not as `default` (generated request types keep them optional)', () => {
    const request = spec.components.schemas.CompletionRequest.properties;
    expect(request.echo).not.toHaveProperty('default');
    expect(request.echo.description).toMatch(/Default: `false`\.$/);
    const requests = ['CompletionRequest', 'ChatCompletionRequest', 'ResponsesRequest', 'EmbeddingRequest'].map((name) => spec.components.schemas[name]);
    const defaults = [...objects(requests)].filter(([, node]) => 'default' in node).map(([pointer]) => pointer);
    expect(defaults).toEqual([]);
  });

  it('makes nulls explicit where OpenAPI 3.0.3 would not apply `nullable` (no type, or a reference)', () => {
    const ignored = [...objects(spec)]
      .filter(([, node]) => node.nullable === true && (!('type' in node) || 'allOf' in node || '$ref' in node))
      .map(([pointer]) => pointer);
    expect(ignored).toEqual([]);
    const nullOnly = { type: 'object', nullable: true, enum: [null] };
    const request = spec.components.schemas.CompletionRequest.properties;
    expect(request.stop.anyOf).toEqual([{ type: 'string' }, { type: 'array', items: { type: 'string' } }, nullOnly]);
    expect(request.stream_options.anyOf).toEqual([{ $ref: '#/components/schemas/StreamOptions' }, nullOnly]);
    expect(request.stream_options.description).toEqual(expect.any(String));
  });

  it('names npm start as its server, an API-key bearer scheme without a format, and a license', () => {
    expect(spec.servers).toEqual([{ url: 'http://localhost:8000' }]);
    expect(spec.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer', description: expect.any(String) });
    expect(spec.info.license.name).toBe('MIT');
  });
});
