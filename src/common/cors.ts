// CORS from --allowed-origins/--allowed-methods/--allowed-headers/--allow-credentials, with
// Starlette's meaning of "*" (everything), which browsers refuse as a literal with credentials.

import type { FastifyCorsOptions } from '@fastify/cors';
import type { ServerConfig } from '../config/server-config';

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export function corsOptions(c: ServerConfig): FastifyCorsOptions {
  const anyOrigin = c.allowedOrigins.includes('*');
  const options: FastifyCorsOptions = {
    // With credentials, "*" must be answered by echoing the request's origin.
    origin: anyOrigin ? (c.allowCredentials ? true : '*') : c.allowedOrigins,
    methods: c.allowedMethods.includes('*') ? ALL_METHODS : c.allowedMethods,
    credentials: c.allowCredentials,
  };
  // Left unset, the preflight's Access-Control-Request-Headers are reflected: a literal "*"
  // would not cover Authorization, which browsers require to be listed by name.
  if (!c.allowedHeaders.includes('*')) options.allowedHeaders = c.allowedHeaders;
  return options;
}
