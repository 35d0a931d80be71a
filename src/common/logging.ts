// Maps --uvicorn-log-level onto Nest's logger levels, and the access / request logs.

import { ConsoleLogger, Logger, LogLevel as NestLogLevel } from '@nestjs/common';
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

/**
 * Nest's console logger with the line's timestamp formatted once per second. Nest formats it
 * with Intl.DateTimeFormat on every line (to the second: "12/01/2026, 3:08:55 AM"), about half of
 * an access-log line's cost (docs/perf/http-overhead.md); the line is byte-identical. `format`
 * has the options of Nest's own formatter (console-logger.service.js); a unit test holds the two equal.
 */
export class ServerLogger extends ConsoleLogger {
  private static readonly format = new Intl.DateTimeFormat(undefined, { year: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', day: '2-digit', month: '2-digit' });
  private second = Number.NaN;
  private stamp = '';

  protected override getTimestamp(): string {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.stamp = ServerLogger.format.format(second * 1000);
    }
    return this.stamp;
  }
}

/** One uvicorn-style line per response: `127.0.0.1:5000 - "GET /v1/models HTTP/1.1" 200`. */
export function installAccessLog(fastify: FastifyInstance, excludedPaths: readonly string[] = []): void {
  const logger = new Logger('access');
  const excluded = new Set(excludedPaths);
  fastify.addHook('onRequest', (request, reply, done) => {
    if (excluded.has(request.url.split('?')[0])) {
      done();
      return;
    }
    reply.raw.once('finish', () => {
      const { socket } = request.raw;
      logger.log(
        `${socket.remoteAddress}:${socket.remotePort} - "${request.method} ${request.url} HTTP/${request.raw.httpVersion}" ${reply.raw.statusCode}`,
      );
    });
    done();
  });
}

/** Lists and objects are cut to this many items before a body is serialized for a cut log line. */
const MAX_PREVIEW_ITEMS = 32;

/**
 * The body as a log line of at most `maxLen` characters shows it: strings, lists and objects cut
 * before they are serialized, so logging a 30 MB body costs what logging a small one does.
 */
function preview(value: unknown, maxLen: number, depth = 0): unknown {
  if (typeof value === 'string') return value.length > maxLen ? `${value.slice(0, maxLen)}…` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 4) return '…';
  if (Array.isArray(value)) {
    const head = value.slice(0, MAX_PREVIEW_ITEMS).map((v) => preview(v, maxLen, depth + 1));
    return value.length > MAX_PREVIEW_ITEMS ? [...head, `… ${value.length - MAX_PREVIEW_ITEMS} more`] : head;
  }
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const key in value) {
    if (n++ >= MAX_PREVIEW_ITEMS) {
      out['…'] = 'more keys';
      break;
    }
    out[key] = preview((value as Record<string, unknown>)[key], maxLen, depth + 1);
  }
  return out;
}

/** --enable-log-requests: logs each request's id, route and body (cut at --max-log-len characters). */
export function installRequestLog(fastify: FastifyInstance, maxLogLen: number | null = null): void {
  const logger = new Logger('requests');
  fastify.addHook('preHandler', (request, _reply, done) => {
    const logged = request.body === undefined || maxLogLen === null ? request.body : preview(request.body, maxLogLen);
    let body = logged === undefined ? '' : JSON.stringify(logged);
    if (maxLogLen !== null && body.length > maxLogLen) body = `${body.slice(0, maxLogLen)}…`;
    logger.log(`Received request ${requestIdOf(request)}: ${request.method} ${request.url} ${body}`);
    done();
  });
}
