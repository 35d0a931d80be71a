// SSE helpers on a real Fastify server (frames, [DONE], error frames, disconnect -> abort) and
// the ValidationPipe's exceptionFactory (400 envelope with `param`).

import { plainToInstance, Type } from 'class-transformer';
import { IsInt, IsString, Min, ValidateNested, validateSync } from 'class-validator';
import Fastify, { FastifyInstance } from 'fastify';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAIHttpError } from '../../../src/serving/openai-error';
import { SseStream } from '../../../src/common/sse';
import { validationExceptionFactory } from '../../../src/common/validation';

class Inner {
  @IsString()
  content!: string;
}
class Body {
  @IsInt()
  @Min(1)
  max_tokens!: number;
  @ValidateNested({ each: true })
  @Type(() => Inner)
  messages!: Inner[];
}

describe('validationExceptionFactory', () => {
  it('builds a 400 "Bad Request" envelope naming the first bad field', () => {
    const body = plainToInstance(Body, { max_tokens: 0, messages: [{ content: 'ok' }, { content: 3 }] });
    const err = validationExceptionFactory(validateSync(body));
    expect(err.getStatus()).toBe(400);
    const response = err.getResponse() as { error: { message: string; type: string; param: string; code: number } };
    expect(response.error.type).toBe('Bad Request');
    expect(response.error.code).toBe(400);
    expect(response.error.param).toBe('max_tokens');
    expect(response.error.message).toMatch(/^2 validation errors:\n {2}max_tokens: .*\n {2}messages\.1\.content: /);
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe('SseStream', () => {
  let fastify: FastifyInstance;
  let base: string;
  let finishedAfterDisconnect: Promise<boolean>;
  let markDisconnect: (aborted: boolean) => void;

  beforeAll(async () => {
    fastify = Fastify();
    fastify.get('/ok', async (_req, reply) => {
      reply.header('x-request-id', 'rid');
      await new SseStream(reply).pipe(
        (async function* () {
          yield { n: 1 };
          yield { n: 2 };
        })(),
      );
    });
    fastify.get('/typed', async (_req, reply) => {
      await new SseStream(reply, { eventOf: (f) => (f as { type?: string }).type, doneMarker: false }).pipe(
        (async function* () {
          yield { type: 'response.created', sequence_number: 0 };
          yield { type: 'response.completed', sequence_number: 1 };
        })(),
      );
    });
    fastify.get('/fails-midway', async (_req, reply) => {
      await new SseStream(reply).pipe(
        (async function* () {
          yield { n: 1 };
          throw OpenAIHttpError.badRequest('bad things', 'prompt');
        })(),
      );
    });
    fastify.get('/endless', async (_req, reply) => {
      const sse = new SseStream(reply);
      await sse.pipe(
        (async function* () {
          for (let i = 0; !sse.signal.aborted; i++) {
            yield { i };
            await sleep(10);
          }
        })(),
      );
      markDisconnect(sse.signal.aborted);
    });
    finishedAfterDisconnect = new Promise((r) => (markDisconnect = r));
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`;
  });
  afterAll(() => fastify.close());

  it('writes data frames, then [DONE], with the event-stream headers', async () => {
    const res = await fetch(`${base}/ok`);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(res.headers.get('x-request-id')).toBe('rid');
    expect(await res.text()).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
  });

  it('writes an event: line per typed frame and, when asked, no [DONE]', async () => {
    expect(await (await fetch(`${base}/typed`)).text()).toBe(
      'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n' +
        'event: response.completed\ndata: {"type":"response.completed","sequence_number":1}\n\n',
    );
  });

  it('turns an error after the first frame into an error frame', async () => {
    const text = await (await fetch(`${base}/fails-midway`)).text();
    expect(text).toBe(
      'data: {"n":1}\n\n' +
        'data: {"error":{"message":"bad things","type":"BadRequestError","param":"prompt","code":400}}\n\n' +
        'data: [DONE]\n\n',
    );
  });

  it('aborts its signal when the client disconnects', async () => {
    await new Promise<void>((resolve) => {
      const req = request(`${base}/endless`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end();
    });
    expect(await finishedAfterDisconnect).toBe(true);
  });
});
