// The only JSON body parser: reads the raw request stream chunk by chunk and, as each chunk
// arrives, counts its bytes (413 past --max-request-body-size), checks it is UTF-8 and checks
// the shape limits (JsonShapeScanner, 400). Each chunk costs work linear in its size, so a big or
// hostile body never holds the event loop for long; only a body that passed all of that is
// handed to JSON.parse (native, ~4 ns/byte). A body that does not arrive within
// --body-read-timeout seconds gets 408. Keys that could poison prototypes are refused.
//
// A body that is already all here when the parser runs (a small request comes in one segment
// with its headers) is read at once and goes through the same checks in one piece (bufferedBody),
// without the stream's flowing-mode start-up and 'data' / 'end' events, ~0.1 ms sooner on a
// request's path to its first token (docs/perf/http-overhead.md).

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse as secureJsonParse } from 'secure-json-parse';
import { OpenAIHttpError } from '../../serving/openai-error';
import { JsonShapeError, JsonShapeScanner, type JsonLimits } from './json-shape';
import { longMemberArrays, parseInSlices } from './json-slices';

export interface JsonBodyOptions {
  limits: JsonLimits;
  maxBodyBytes: number;
  /** 0 = no timeout. */
  bodyReadTimeoutMs: number;
}

/** application/json and the structured-syntax `+json` types (as FastAPI accepts). */
const JSON_CONTENT_TYPES: Array<string | RegExp> = ['application/json', /^application\/[\w.-]+\+json$/i];

/** Reads and parses one body; rejects with an OpenAIHttpError carrying the status to answer. */
export function readJsonBody(stream: NodeJS.ReadableStream, contentLength: number | null, options: JsonBodyOptions): Promise<unknown> {
  if (contentLength !== null && contentLength > options.maxBodyBytes) {
    return Promise.reject(bodyTooLarge(options.maxBodyBytes));
  }
  return new Promise<unknown>((resolve, reject) => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const scanner = new JsonShapeScanner(options.limits);
    const pieces: string[] = [];
    let bytes = 0;
    let settled = false;
    const timer =
      options.bodyReadTimeoutMs > 0
        ? setTimeout(() => fail(new OpenAIHttpError(408, `The request body did not arrive within ${options.bodyReadTimeoutMs / 1000} s (--body-read-timeout).`)), options.bodyReadTimeoutMs)
        : null;

    const cleanup = (): void => {
      settled = true;
      if (timer) clearTimeout(timer);
      stream.removeListener('data', onData);
      stream.removeListener('end', onEnd);
      stream.removeListener('error', onError);
    };
    const fail = (err: Error): void => {
      if (settled) return;
      cleanup();
      // Stop reading: the rest of the body is discarded with the connection (see the filter).
      stream.pause();
      reject(err);
    };
    const take = (text: string): void => {
      scanner.feed(text);
      pieces.push(text);
    };
    const onData = (chunk: Buffer | string): void => {
      if (settled) return;
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      bytes += buffer.length;
      if (bytes > options.maxBodyBytes) return fail(bodyTooLarge(options.maxBodyBytes));
      try {
        take(decoder.decode(buffer, { stream: true }));
      } catch (err) {
        fail(bodyError(err));
      }
    };
    const onEnd = (): void => {
      if (settled) return;
      try {
        take(decoder.decode());
      } catch (err) {
        return fail(bodyError(err));
      }
      cleanup();
      parseScanned(pieces.join(''), scanner).then(resolve, (err: unknown) => reject(bodyError(err)));
    };
    const onError = (err: Error): void => fail(err);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}

/** A body the parser refuses is a request-validation error in vLLM (400 "Bad Request", param "body"). */
function badBody(message: string): OpenAIHttpError {
  return new OpenAIHttpError(400, message, 'body', 'Bad Request');
}

function bodyTooLarge(maxBodyBytes: number): OpenAIHttpError {
  return new OpenAIHttpError(413, `The request body is larger than ${maxBodyBytes} bytes (--max-request-body-size).`);
}

function bodyError(err: unknown): Error {
  if (err instanceof OpenAIHttpError) return err;
  if (err instanceof JsonShapeError) return badBody(err.message);
  if ((err as NodeJS.ErrnoException | null)?.code === 'ERR_ENCODING_INVALID_ENCODED_DATA') {
    return badBody('The request body is not valid UTF-8.');
  }
  return err as Error;
}

/** A scanned body: parsed whole, or with its long member arrays a slice at a time (json-slices.ts). */
function parseScanned(text: string, scanner: JsonShapeScanner): Promise<unknown> {
  const arrays = longMemberArrays(scanner.memberArrays);
  if (arrays === null) return Promise.resolve().then(() => parseJson(text));
  return parseInSlices(text, arrays, parseJson);
}

/** Empty body: undefined (the route's validation says what it needed); else strict JSON. */
function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return secureJsonParse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const message = (err as Error).message;
    if (/prototype/i.test(message)) {
      throw badBody('JSON keys "__proto__" and "constructor.prototype" are not accepted.');
    }
    throw badBody(`The request body is not valid JSON: ${message}`);
  }
}

/**
 * The whole body, when the request stream already holds all of it: a small request usually
 * arrives in one segment with its headers, and once llhttp has gone through that segment (it
 * emits the request at the end of the headers; the route's hooks may run inside that call) the
 * body's bytes are buffered in the stream. Read then, it skips the stream's flowing-mode start-up
 * and its 'data' / 'end' events. llhttp pushes no byte past Content-Length, so a buffer of that
 * length is the whole body even before the message's end is marked. null when anything is still
 * to come (then the stream path).
 */
function bufferedBody(request: FastifyRequest, contentLength: number): Buffer | null {
  const raw = request.raw;
  if (raw.readableLength !== contentLength) return null;
  if (contentLength === 0) return Buffer.alloc(0);
  const body = raw.read() as Buffer | null;
  return body !== null && body.length === contentLength ? body : null;
}

/** Checks and parses a body that is all here, as the stream path would chunk by chunk. */
function parseWhole(body: Buffer, options: JsonBodyOptions): { value: unknown } | Promise<unknown> {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    const scanner = new JsonShapeScanner(options.limits);
    scanner.feed(text);
    if (longMemberArrays(scanner.memberArrays) === null) return { value: parseJson(text) };
    return parseScanned(text, scanner).catch((err: unknown) => Promise.reject(bodyError(err)));
  } catch (err) {
    throw bodyError(err);
  }
}

/** Registers the JSON parser on `fastify` for JSON_CONTENT_TYPES. */
export function registerJsonBodyParser(fastify: FastifyInstance, options: JsonBodyOptions): void {
  for (const type of JSON_CONTENT_TYPES) {
    fastify.addContentTypeParser(type, (request: FastifyRequest, payload: NodeJS.ReadableStream, done: (err: Error | null, body?: unknown) => void) => {
      const header = request.headers['content-length'];
      const parsed = header === undefined ? null : Number(header);
      const length = Number.isFinite(parsed) ? parsed : null;
      const parseStream = (): void => {
        readJsonBody(payload, length, options).then((body) => done(null, body), (err: Error) => done(err));
      };
      if (payload !== request.raw || length === null || length > options.maxBodyBytes || request.headers['transfer-encoding'] !== undefined) {
        parseStream();
        return;
      }
      const parseBuffered = (): boolean => {
        const buffered = bufferedBody(request, length);
        if (buffered === null) return false;
        let parsed: { value: unknown } | Promise<unknown>;
        try {
          parsed = parseWhole(buffered, options);
        } catch (err) {
          done(err as Error);
          return true;
        }
        if (parsed instanceof Promise) parsed.then((body) => done(null, body), (err: Error) => done(err));
        else done(null, parsed.value);
        return true;
      };
      // Else once the segment that carried the headers has been parsed (see bufferedBody).
      if (!parseBuffered()) process.nextTick(() => parseBuffered() || parseStream());
    });
  }
}
