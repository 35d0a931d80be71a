// HTTP metrics with prometheus-fastapi-instrumentator's names and defaults: status codes grouped
// as "2xx", handler = the route template ("none" when no route matched), and the probe/scrape
// routes left out. Hooked on the raw response's 'finish' so SSE (hijacked) replies count too.
// Its cost per request is ~1% of the HTTP thread's per-request work (docs/perf/http-overhead.md):
// left as is.

import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, Summary } from 'prom-client';
import { HTTP_DURATION_BUCKETS, HTTP_DURATION_HIGHR_BUCKETS } from './buckets';

const EXCLUDED = new Set(['/metrics', '/health', '/load', '/ping', '/version', '/server_info']);

export function installHttpMetrics(fastify: FastifyInstance, registry: Registry): void {
  const registers = [registry];
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'Total number of requests by method, status and handler.',
    labelNames: ['method', 'status', 'handler'],
    registers,
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Latency with only few buckets by handler.',
    labelNames: ['method', 'handler'],
    buckets: HTTP_DURATION_BUCKETS,
    registers,
  });
  const durationHighr = new Histogram({
    name: 'http_request_duration_highr_seconds',
    help: 'Latency with many buckets but no API specific labels.',
    buckets: HTTP_DURATION_HIGHR_BUCKETS,
    registers,
  });

  // The instrumentator's size metrics: summaries (count and sum, no quantiles) of the
  // Content-Length headers; a response without one (SSE) counts as 0 bytes, as there.
  const requestSize = new Summary({
    name: 'http_request_size_bytes',
    help: 'Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ',
    labelNames: ['handler'],
    percentiles: [],
    registers,
  });
  const responseSize = new Summary({
    name: 'http_response_size_bytes',
    help: 'Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ',
    labelNames: ['handler'],
    percentiles: [],
    registers,
  });
  const contentLength = (value: unknown): number => {
    const n = Number(Array.isArray(value) ? value[0] : value);
    return Number.isFinite(n) && n >= 0 ? n : 0;
  };

  fastify.addHook('onRequest', (request, reply, done) => {
    const start = process.hrtime.bigint();
    reply.raw.once('finish', () => {
      const handler = request.routeOptions.url ?? 'none';
      if (EXCLUDED.has(handler)) return;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const status = `${Math.floor(reply.raw.statusCode / 100)}xx`;
      requests.inc({ method: request.method, status, handler });
      duration.observe({ method: request.method, handler }, seconds);
      durationHighr.observe(seconds);
      requestSize.observe({ handler }, contentLength(request.headers['content-length']));
      responseSize.observe({ handler }, contentLength(reply.raw.getHeader('content-length')));
    });
    done();
  });
}
