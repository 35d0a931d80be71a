// The OpenAPI document, generated from controllers and DTO decorators (never by hand), and the
// Swagger UI at /docs (assets from the swagger-ui-dist npm package, so it works offline).
// The bearer scheme lets the UI's "Authorize" button send `Authorization: Bearer <key>`.

import type { INestApplication } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DocumentBuilder, getSchemaPath, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { OperationObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { ErrorResponse, UnauthorizedResponse } from '../../common/error-response.dto';
import { PUBLIC_OPENAPI_EXTENSION } from '../../common/public.decorator';
import { pathOf } from '../../common/request-path';
import { buildErrorBody } from '../../serving/openai-error';
import type { ServerConfig } from '../../config/server-config';
import { ORTLLM_VERSION } from '../../config/version';

const BEARER_SCHEME = 'bearer';

export function buildOpenApiDocument(app: INestApplication, config: ServerConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('ortllm')
    .setDescription("OpenAI-compatible LLM inference server (vLLM's HTTP API) on onnxruntime-node.")
    .setVersion(ORTLLM_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'A key given with --api-key / VLLM_API_KEY' }, BEARER_SCHEME)
    .addSecurityRequirements(BEARER_SCHEME);
  if (config.rootPath) builder.addServer(config.rootPath);
  const document = SwaggerModule.createDocument(app, builder.build(), {
    operationIdFactory: (_controllerKey: string, methodKey: string) => methodKey,
    extraModels: [ErrorResponse, UnauthorizedResponse],
  });
  documentAuthAndErrors(document);
  return document;
}

const ERROR_RESPONSE = {
  description: 'Error envelope (code = HTTP status)',
  content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorResponse) } } },
};
const UNAUTHORIZED_RESPONSE = {
  description: 'Missing or wrong API key',
  content: { 'application/json': { schema: { $ref: getSchemaPath(UnauthorizedResponse) } } },
};

/**
 * Operations marked @Public() need no key: `security: []` overrides the global bearer
 * requirement; the others document the 401 body. Every operation documents the error envelope
 * as its `default` response.
 */
function documentAuthAndErrors(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const operation of Object.values(pathItem) as OperationObject[]) {
      if (typeof operation !== 'object' || operation === null || !('responses' in operation)) continue;
      const extensible = operation as OperationObject & Record<string, unknown>;
      if (PUBLIC_OPENAPI_EXTENSION in extensible) {
        delete extensible[PUBLIC_OPENAPI_EXTENSION];
        operation.security = [];
      } else {
        operation.responses['401'] ??= UNAUTHORIZED_RESPONSE;
      }
      operation.responses.default ??= ERROR_RESPONSE;
    }
  }
}

/** Where the docs are served (open without an API key). */
export const DOCS_PATHS = ['/docs', '/openapi.json'];

/**
 * The files of swagger-ui-dist the Swagger UI page loads (plus Nest's generated init script);
 * the rest of the package (package.json, README, source maps) is not served.
 */
const SWAGGER_UI_FILES = new Set([
  'swagger-ui.css',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'swagger-ui-init.js',
  'favicon-16x16.png',
  'favicon-32x32.png',
]);

function serveOnlySwaggerUiFiles(app: INestApplication): void {
  const fastify = (app as NestFastifyApplication).getHttpAdapter().getInstance();
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const path = pathOf(request);
    if (!path.startsWith('/docs/') || path === '/docs/' || SWAGGER_UI_FILES.has(path.slice('/docs/'.length))) return done();
    void reply.status(404).header('content-type', 'application/json').send(buildErrorBody('Not Found', 404, null, 'Not Found'));
  });
}

/** Serves GET /docs (Swagger UI) and GET /openapi.json; both stay open without an API key. */
export function setupDocs(app: INestApplication, config: ServerConfig): void {
  serveOnlySwaggerUiFiles(app);
  const document = buildOpenApiDocument(app, config);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    raw: ['json'],
    customSiteTitle: 'ortllm API',
    swaggerOptions: { persistAuthorization: true },
  });
}

/** Recursively sorts object keys so the committed spec diffs cleanly. */
export function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries.map(([k, v]) => [k, sortKeysDeep(v)]));
  }
  return value;
}
