// @Public() marks a route (or every route of a controller) as open without an API key: /health,
// /ping, /load and the legacy POST /abort_requests. (vLLM's middleware checks only paths under
// /v1; the compute routes outside it, /tokenize, /pooling, /score, /rerank, /invocations…, stay
// guarded here.) It sets a flag in the Fastify route config, which the API-key hook
// (api-key-auth.ts) reads in onRequest, before the body is read. /docs and /openapi.json are
// served outside Nest's router; the hook knows them by path.
// The OpenAPI extension lets the spec say `security: []` for these operations.

import { ApiExtension } from '@nestjs/swagger';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';

export const PUBLIC_OPENAPI_EXTENSION = 'x-ortllm-public';
/** The Fastify route-config key that marks an open route. */
export const PUBLIC_ROUTE_CONFIG = 'ortllmPublic';

function markPublic(handler: object): void {
  const config = (Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as Record<string, unknown> | undefined) ?? {};
  Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { ...config, [PUBLIC_ROUTE_CONFIG]: true }, handler);
}

function publicRoute(target: object, key?: string | symbol, descriptor?: PropertyDescriptor): void {
  if (descriptor) {
    ApiExtension(PUBLIC_OPENAPI_EXTENSION, true)(target, key, descriptor);
    markPublic(descriptor.value as object);
    return;
  }
  // On a controller: every method of it.
  const prototype = (target as { prototype: object }).prototype;
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const method = Object.getOwnPropertyDescriptor(prototype, name);
    if (name !== 'constructor' && typeof method?.value === 'function') publicRoute(prototype, name, method);
  }
}

export const Public = (): MethodDecorator & ClassDecorator => publicRoute;
