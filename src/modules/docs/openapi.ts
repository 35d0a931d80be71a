// The OpenAPI document, generated from controllers and DTO decorators (never by hand), and the
// Swagger UI at /docs (assets from the swagger-ui-dist npm package, so it works offline).
// The bearer scheme lets the UI's "Authorize" button send `Authorization: Bearer <key>`.
// Conventions every route gets without per-route work live in operation-conventions.ts and
// schema-conventions.ts.

import type { INestApplication } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pathOf } from '../../common/request-path';
import { buildErrorBody } from '../../serving/openai-error';
import { ErrorResponse, UnauthorizedResponse } from '../../common/error-response.dto';
import { reportedModelName, type ServerConfig } from '../../config/server-config';
import { trustedProxies } from '../../config/trusted-proxies';
import { ORTLLM_VERSION } from '../../config/version';
import { documentBodyExample, documentEventStream, documentSecurityAndErrors, operationsOf } from './operation-conventions';
import { makeNullsExplicit, usePublicSchemaNames } from './schema-conventions';
import { setupRedoc } from './redoc';
import { describeRequestDefaults } from './request-defaults';

const BEARER_SCHEME = 'bearer';

/** Where `npm start` listens: the committed spec's server. The served spec names the URL it was fetched from. */
const DEFAULT_SERVER_URL = 'http://localhost:8000';

export function buildOpenApiDocument(app: INestApplication, config: ServerConfig): OpenAPIObject {
  const info = new DocumentBuilder()
    .setTitle('ortllm')
    .setDescription("OpenAI-compatible LLM inference server (vLLM's HTTP API) on onnxruntime-node.")
    .setVersion(ORTLLM_VERSION)
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addServer(`${DEFAULT_SERVER_URL}${config.rootPath ?? ''}`)
    // An API key is an opaque string: no bearerFormat (it would claim e.g. a JWT).
    .addSecurity(BEARER_SCHEME, { type: 'http', scheme: 'bearer', description: 'A key given with --api-key / VLLM_API_KEY' })
    .addSecurityRequirements(BEARER_SCHEME)
    .build();
  const document = SwaggerModule.createDocument(app, info, {
    operationIdFactory: (_controllerKey: string, methodKey: string) => methodKey,
    extraModels: [ErrorResponse, UnauthorizedResponse],
  });
  const modelName = reportedModelName(config);
  for (const { operation } of operationsOf(document)) {
    documentSecurityAndErrors(operation);
    documentEventStream(operation);
    documentBodyExample(operation, modelName);
  }
  makeNullsExplicit(document);
  describeRequestDefaults(document);
  usePublicSchemaNames(document);
  return document;
}

const SCHEMES = new Set(['http', 'https']);
/** A host name, IPv4 address or bracketed IPv6 address, with an optional port: nothing a URL could be bent with. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The served spec's server: the scheme and host the client reached plus --root-path. A proxy's
 * X-Forwarded-Proto / -Host count only from a peer --forwarded-allow-ips trusts (as uvicorn);
 * a scheme other than http(s) or a malformed host falls back to the default.
 */
export function servedFrom(request: FastifyRequest, config: ServerConfig, trusted: (address: string | undefined) => boolean): string {
  const first = (header: string | string[] | undefined): string | undefined => (Array.isArray(header) ? header[0] : header)?.split(',')[0].trim();
  const forwarded = trusted(request.raw.socket.remoteAddress);
  const proto = ((forwarded ? first(request.headers['x-forwarded-proto']) : undefined) ?? request.protocol).toLowerCase();
  const host = (forwarded ? first(request.headers['x-forwarded-host']) : undefined) ?? request.headers.host;
  if (!host || !SCHEMES.has(proto) || !HOST.test(host)) return `${DEFAULT_SERVER_URL}${config.rootPath ?? ''}`;
  return `${proto}://${host}${config.rootPath ?? ''}`;
}

/** Where the docs are served (open without an API key). */
export const DOCS_PATHS = ['/docs', '/redoc', '/openapi.json'];

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

/** Serves GET /docs (Swagger UI), GET /redoc and GET /openapi.json; all stay open without an API key. */
export function setupDocs(app: INestApplication, config: ServerConfig): void {
  serveOnlySwaggerUiFiles(app);
  const document = buildOpenApiDocument(app, config);
  const trusted = trustedProxies(config.forwardedAllowIps ?? []);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    raw: ['json'],
    customSiteTitle: 'ortllm API',
    swaggerOptions: { persistAuthorization: true },
    patchDocumentOnRequest: <TRequest>(request: TRequest, _reply: unknown, doc: OpenAPIObject) => ({
      ...doc,
      servers: [{ url: servedFrom(request as FastifyRequest, config, trusted) }],
    }),
  });
  setupRedoc(app, config.rootPath);
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
