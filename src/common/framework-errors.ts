// The errors the HTTP framework answers before any route runs get the same envelope as the rest:
// a malformed request line or headers too large (Node's parser, 400 / 431), a request that did not
// arrive in time (408), a URL that does not decode (400), a body of a type the server does not take
// (415: JSON only, so a cross-site form cannot drive the server without a CORS preflight), and a
// known path called with the wrong method (405 with Allow, as Starlette answers), and an API path
// the served model lacks (404 naming the API).

import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { buildErrorBody, OpenAIHttpError } from '../serving/openai-error';
import { pathOf } from './request-path';

/** The status Node's parser errors deserve (Fastify's mapping). */
function clientErrorStatus(code: string | undefined): number {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  return 400;
}

const CLIENT_ERROR_MESSAGES: Record<number, string> = {
  400: 'The request could not be parsed as HTTP.',
  408: 'The request did not arrive in time (--body-read-timeout).',
  431: 'The request headers are too large.',
};

/** Fastify's clientErrorHandler: a raw HTTP response with the envelope, then the socket closes. */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const status = clientErrorStatus(err.code);
  const body = JSON.stringify(buildErrorBody(CLIENT_ERROR_MESSAGES[status], status, null, STATUS_CODES[status]));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** Fastify's frameworkErrors: URLs that do not decode, too-long parameters. */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode ?? 400;
  void reply
    .status(status)
    .header('content-type', 'application/json')
    .send(buildErrorBody(error.message, status, null, STATUS_CODES[status]));
}

/**
 * Every body type without a parser of its own (JSON's, or multipart's where a route registers one)
 * is refused before it is read. A path no route serves answers 404 whatever the body type (a text
 * model has no /v1/audio/*: a multipart upload there is "not found", not "unsupported").
 */
export function refuseOtherBodyTypes(fastify: FastifyInstance): void {
  fastify.addContentTypeParser('*', (request: FastifyRequest, _payload: unknown, done: (err: Error | null, body?: unknown) => void) => {
    if (request.is404) return done(null, undefined);
    const type = request.headers['content-type'];
    const what = type ? `Content-Type '${type.split(';')[0].trim()}'` : 'A body without a Content-Type';
    done(new OpenAIHttpError(415, `${what} is not supported: send the body as application/json.`, null, 'Unsupported Media Type'));
  });
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The methods a path is served under other than the request's own (empty for an unknown path). */
export function otherMethodsServing(fastify: FastifyInstance, request: FastifyRequest): string[] {
  const url = pathOf(request);
  return METHODS.filter((method) => method !== request.method && fastify.findRoute({ method, url }) !== null);
}

function methodNotAllowed(reply: FastifyReply, allowed: string[]): FastifyReply {
  return reply.status(405).header('allow', allowed.join(', ')).header('content-type', 'application/json');
}

const METHOD_NOT_ALLOWED_BODY = buildErrorBody('Method Not Allowed', 405, null, STATUS_CODES[405]);

/** 405 + Allow for a path that exists under other methods; other unknown paths stay 404. */
export function installMethodNotAllowed(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!request.is404 || request.method === 'OPTIONS') return done();
    const allowed = otherMethodsServing(fastify, request);
    if (allowed.length === 0) return done();
    void methodNotAllowed(reply, allowed).send(METHOD_NOT_ALLOWED_BODY);
  });
}

/**
 * A path no route serves because the served model lacks its API (named by `messageFor`) answers
 * 404 with that message instead of a bare "Not Found". Installed after the key check.
 */
export function installMissingApiAnswers(fastify: FastifyInstance, messageFor: (path: string) => string | null): void {
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!request.is404 || request.method === 'OPTIONS') return done();
    const message = messageFor(pathOf(request));
    if (message === null) return done();
    void reply.status(404).header('content-type', 'application/json').send(buildErrorBody(message, 404));
  });
}

/** @fastify/cors's answer to an OPTIONS request that is no preflight (no Origin or Access-Control-Request-Method). */
const NOT_A_PREFLIGHT = 'Invalid Preflight Request';

/**
 * An OPTIONS request that is no CORS preflight is answered as any other method the path does
 * not serve (405 + Allow, or 404), in the JSON envelope, with the CORS headers already set.
 */
export function installOptionsAnswers(fastify: FastifyInstance): void {
  fastify.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (request.method !== 'OPTIONS' || reply.statusCode !== 400 || payload !== NOT_A_PREFLIGHT) return done(null, payload);
    const allowed = otherMethodsServing(fastify, request);
    if (allowed.length > 0) {
      methodNotAllowed(reply, allowed);
      return done(null, JSON.stringify(METHOD_NOT_ALLOWED_BODY));
    }
    void reply.status(404).header('content-type', 'application/json');
    done(null, JSON.stringify(buildErrorBody('Not Found', 404, null, STATUS_CODES[404])));
  });
}
