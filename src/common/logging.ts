// Maps --uvicorn-log-level onto Nest's logger levels, and the access / request logs.

import { Logger, LogLevel as NestLogLevel } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import type { LogLevel } from '../config/server-config';
import { requestIdOf } from './request-id';

const ORDER: NestLogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
const CUTOFF: Record<LogLevel, NestLogLevel> = {
  critical: 'fatal',
  error: 'error',
  warning: 'warn',
  info: 'log',
  debug: 'debug',
  trace: 'verbose',
};

/** Nest levels enabled at a uvicorn-style level ("info" -> fatal, error, warn, log). */
export function nestLogLevels(level: LogLevel): NestLogLevel[] {
  return ORDER.slice(0, ORDER.indexOf(CUTOFF[level]) + 1);
}

/** One uvicorn-style line per response: `127.0.0.1:5000 - "GET /v1/models HTTP/1.1" 200`. */
export function installAccessLog(fastify: FastifyInstance): void {
  const logger = new Logger('access');
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.raw.once('finish', () => {
      const { socket } = request.raw;
      logger.log(
        `${socket.remoteAddress}:${socket.remotePort} - "${request.method} ${request.url} HTTP/${request.raw.httpVersion}" ${reply.raw.statusCode}`,
      );
    });
    done();
  });
}

const MAX_LOGGED_BODY = 2000;

/** Values longer than this are cut before they are serialized for the log. */
const MAX_PREVIEW_ITEMS = 32;

/**
 * The body as the log shows it: strings, lists and objects cut to a few items before they are
 * serialized, so logging a 30 MB body costs what logging a small one does.
 */
function preview(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > MAX_LOGGED_BODY ? `${value.slice(0, MAX_LOGGED_BODY)}…` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 4) return '…';
  if (Array.isArray(value)) {
    const head = value.slice(0, MAX_PREVIEW_ITEMS).map((v) => preview(v, depth + 1));
    return value.length > MAX_PREVIEW_ITEMS ? [...head, `… ${value.length - MAX_PREVIEW_ITEMS} more`] : head;
  }
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const key in value) {
    if (n++ >= MAX_PREVIEW_ITEMS) {
      out['…'] = 'more keys';
      break;
    }
    out[key] = preview((value as Record<string, unknown>)[key], depth + 1);
  }
  return out;
}

/** --enable-log-requests: logs each request's id, route and (truncated) body. */
export function installRequestLog(fastify: FastifyInstance): void {
  const logger = new Logger('requests');
  fastify.addHook('preHandler', (request, _reply, done) => {
    let body = request.body === undefined ? '' : JSON.stringify(preview(request.body));
    if (body.length > MAX_LOGGED_BODY) body = `${body.slice(0, MAX_LOGGED_BODY)}…`;
    logger.log(`Received request ${requestIdOf(request)}: ${request.method} ${request.url} ${body}`);
    done();
  });
}
