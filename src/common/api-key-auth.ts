// The API key (vLLM's AuthenticationMiddleware): with --api-key / VLLM_API_KEY set, every route
// needs `Authorization: Bearer <key>` except those marked @Public() and the docs. It runs as a
// Fastify onRequest hook, so a request without the key is answered 401 before its body is read
// or parsed (lingering-close.ts lets the client read it while still uploading). Unknown paths under vLLM's guarded prefixes (percent-decoded) answer 401 too (not
// 404), and so does a guarded route called with another method (not 405), so routes cannot be
// enumerated without a key. Keys are compared as SHA-256 digests with timingSafeEqual.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { otherMethodsServing } from './framework-errors';
import { closeAfterAnswer } from './lingering-close';
import { PUBLIC_ROUTE_CONFIG } from './public.decorator';
import { pathOf } from './request-path';

/** vLLM answers 401 with this exact body (a plain string, not the error envelope). */
export const UNAUTHORIZED_BODY = { error: 'Unauthorized' } as const;

/** vLLM's guarded prefixes: an unknown path under one needs the key before it may learn it is unknown. */
const GUARDED_PREFIXES = ['/v1', '/v2', '/inference', '/cohere'];

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

function underPrefix(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The path as the router matches it (%76%31 is /v1); undecodable paths are checked as sent. */
function decodedPath(request: FastifyRequest): string {
  try {
    return decodeURIComponent(pathOf(request));
  } catch {
    return pathOf(request);
  }
}

function isPublicRoute(config: unknown): boolean {
  return (config as Record<string, unknown> | undefined)?.[PUBLIC_ROUTE_CONFIG] === true;
}

export class ApiKeyChecker {
  private readonly keyDigests: Buffer[];
  /** Paths of @Public() routes: calling them with another method needs no key either. */
  readonly publicPaths = new Set<string>();

  /** `otherMethods`: the methods the request's path is served under besides its own. */
  constructor(
    apiKeys: readonly string[],
    private readonly otherMethods: (request: FastifyRequest) => string[] = () => [],
  ) {
    this.keyDigests = apiKeys.map(digest);
  }

  get enabled(): boolean {
    return this.keyDigests.length > 0;
  }

  /** True when the token matches one of the keys; checks all keys to keep timing flat. */
  isValidKey(token: string): boolean {
    const candidate = digest(token);
    let ok = false;
    for (const key of this.keyDigests) ok = timingSafeEqual(candidate, key) || ok;
    return ok;
  }

  /** Whether this request may go on: no key configured, an open route, or a valid key. */
  allows(request: FastifyRequest, openPrefixes: readonly string[]): boolean {
    if (!this.enabled || request.method === 'OPTIONS') return true;
    const path = decodedPath(request);
    if (request.is404) {
      const guarded = underPrefix(path, GUARDED_PREFIXES) || (!this.publicPaths.has(path) && !underPrefix(path, openPrefixes) && this.otherMethods(request).length > 0);
      if (!guarded) return true;
    } else if (isPublicRoute(request.routeOptions.config) || underPrefix(path, openPrefixes)) {
      return true;
    }
    const token = bearerToken(request.headers.authorization);
    return token !== null && this.isValidKey(token);
  }
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Installs the check as an onRequest hook. `openPrefixes`: paths served outside Nest's router that
 * stay open (the docs).
 */
export function installApiKeyAuth(fastify: FastifyInstance, apiKeys: readonly string[], openPrefixes: readonly string[]): ApiKeyChecker {
  const checker = new ApiKeyChecker(apiKeys, (request) => otherMethodsServing(fastify, request));
  if (!checker.enabled) return checker;
  fastify.addHook('onRoute', (route) => {
    if (isPublicRoute(route.config)) checker.publicPaths.add(route.url);
  });
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (checker.allows(request, openPrefixes)) return done();
    // A body nobody will read: close the connection rather than read it all, lingering so that a
    // client still uploading reads the 401 instead of a reset.
    if (hasBody(request)) closeAfterAnswer(reply);
    void reply.status(401).header('content-type', 'application/json').send(UNAUTHORIZED_BODY);
  });
  return checker;
}
