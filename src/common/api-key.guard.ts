// Global API-key guard (vLLM's AuthenticationMiddleware): with --api-key / VLLM_API_KEY set,
// every Nest route needs `Authorization: Bearer <key>` except those marked @Public().
// Keys are compared as SHA-256 digests with timingSafeEqual so timing leaks nothing.

import { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { IS_PUBLIC_KEY } from './public.decorator';

/** vLLM answers 401 with this exact body (a plain string, not the error envelope). */
export const UNAUTHORIZED_BODY = { error: 'Unauthorized' } as const;

/** Thrown by the guard; the exception filter answers it with 401 and UNAUTHORIZED_BODY. */
export class UnauthorizedKeyError extends Error {
  constructor() {
    super('Unauthorized');
    this.name = 'UnauthorizedKeyError';
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Extracts the token of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
function bearerToken(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  const match = /^\s*bearer\s+(.+?)\s*$/i.exec(value);
  return match ? match[1] : null;
}

export class ApiKeyGuard implements CanActivate {
  private readonly keyDigests: Buffer[];

  constructor(
    private readonly reflector: Reflector,
    apiKeys: readonly string[],
  ) {
    this.keyDigests = apiKeys.map(digest);
  }

  /** True when the token matches one of the keys; checks all keys to keep timing flat. */
  isValidKey(token: string): boolean {
    const candidate = digest(token);
    let ok = false;
    for (const key of this.keyDigests) ok = timingSafeEqual(candidate, key) || ok;
    return ok;
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.keyDigests.length === 0) return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (request.method === 'OPTIONS') return true;
    const token = bearerToken(request.headers.authorization);
    if (token !== null && this.isValidKey(token)) return true;
    throw new UnauthorizedKeyError();
  }
}
