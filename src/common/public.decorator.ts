// @Public() marks a route (or a controller) as open without an API key: /health, /ping, /load
// and the legacy POST /abort_requests. (vLLM's middleware checks only paths under /v1; the
// compute routes outside it, /tokenize, /pooling, /score, /rerank, /invocations…, stay guarded
// here.) /docs and
// /openapi.json are served outside Nest's router and are therefore never guarded.
// The OpenAPI extension lets the spec say `security: []` for these operations.

import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';

export const IS_PUBLIC_KEY = 'ortllm:isPublic';
export const PUBLIC_OPENAPI_EXTENSION = 'x-ortllm-public';

export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC_KEY, true), ApiExtension(PUBLIC_OPENAPI_EXTENSION, true));
