// @Public() marks a route (or a controller) as open without an API key. Only /health, /ping,
// and the legacy POST /abort_requests use it; /docs and /openapi.json are served outside Nest's
// router and are therefore never guarded.

import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC_KEY = 'ortllm:isPublic';

export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC_KEY, true);
