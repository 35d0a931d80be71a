// GET /redoc: the ReDoc view of /openapi.json (as FastAPI serves it), with the redoc npm
// package's standalone bundle served locally so it works offline. Open without an API key.

import type { INestApplication } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';

const BUNDLE_ROUTE = '/redoc/redoc.standalone.js';

export function setupRedoc(app: INestApplication, rootPath: string): void {
  const fastify = app.getHttpAdapter().getInstance() as FastifyInstance;
  const bundle = readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'));
  const page = `<!DOCTYPE html>
<html>
  <head>
    <title>ortllm API - ReDoc</title>
    <meta charset="utf-8"/>
    <meta name="viewport" content="width=device-width, initial-scale=1">
  </head>
  <body>
    <redoc spec-url="${rootPath}/openapi.json"></redoc>
    <script src="${rootPath}${BUNDLE_ROUTE}"></script>
  </body>
</html>
`;
  fastify.get('/redoc', (_request, reply) => {
    void reply.type('text/html; charset=utf-8').send(page);
  });
  fastify.get(BUNDLE_ROUTE, (_request, reply) => {
    void reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400').send(bundle);
  });
}
