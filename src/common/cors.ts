// CORS from --allowed-origins/--allowed-methods/--allowed-headers/--allow-credentials, with
// Starlette's meaning of "*" (everything), which browsers refuse as a literal with credentials.

import type { FastifyCorsOptions } from '@fastify/cors';
import type { ServerConfig } from '../config/server-config';

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export function corsOptions(c: ServerConfig): FastifyCorsOptions {
  const anyOrigin = c.allowedOrigins.includes('*');
  return {
    // With credentials, "*" must be answered by echoing the request's origin.
    origin: anyOrigin ? (c.allowCredentials ? true : '*') : c.allowedOrigins,
    methods: c.allowedMethods.includes('*') ? ALL_METHODS : c.allowedMethods,
    // undefined = reflect Access-Control-Request-Headers (any header).
    allowedHeaders: c.allowedHeaders.includes('*') ? undefined : c.allowedHeaders,
    credentials: c.allowCredentials,
  };
}
