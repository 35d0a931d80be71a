// The request validation pipe builds DTO instances in time linear in the body (nested DTOs become
// instances, other values are kept without being walked), and large JSON responses written in
// pieces are byte for byte what JSON.stringify writes.

import { Transform, Type } from 'class-transformer';
import { IsInt, IsObject, IsOptional, IsString, ValidateNested } from 'class-validator';
import Fastify from 'fastify';
import { sendJson } from '../../../src/common/json-response';
import { RequestValidationPipe, toDtoInstance } from '../../../src/common/validation';

class Inner {
  @IsString()
  content!: string;
}

class Outer {
  @IsInt()
  max_tokens!: number;

  @ValidateNested({ each: true })
  @Type(() => Inner)
  messages!: Inner[];

  @IsOptional()
  @ValidateNested()
  @Type(() => Inner)
  first?: Inner;

  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

const pipe = new RequestValidationPipe();
const validate = (body: unknown): unknown => pipe.transform(body, { type: 'body', metatype: Outer });

/** A plain object that counts how often its keys are listed or read. */
function watched(entries: number): { value: Record<string, unknown>; touches: () => number } {
  let touches = 0;
  const target = Object.fromEntries(Array.from({ length: entries }, (_, i) => [`k${i}`, i]));
  const value = new Proxy(target, {
    ownKeys: (t) => {
      touches++;
      return Reflect.ownKeys(t);
    },
    get: (t, key) => {
      if (typeof key === 'string' && key.startsWith('k')) touches++;
      return Reflect.get(t, key) as unknown;
    },
  });
  return { value, touches: () => touches };
}

describe('RequestValidationPipe', () => {
  it('makes nested DTOs instances (objects and lists) and validates them', () => {
    const out = validate({ max_tokens: 2, messages: [{ content: 'a' }], first: { content: 'b' }, extra: { x: 1 } }) as Outer & { extra: unknown };
    expect(out).toBeInstanceOf(Outer);
    expect(out.messages[0]).toBeInstanceOf(Inner);
    expect(out.first).toBeInstanceOf(Inner);
    expect(out.extra).toEqual({ x: 1 });
    expect(() => validate({ max_tokens: 2, messages: [{ content: 3 }] })).toThrow(
      expect.objectContaining({ response: expect.objectContaining({ error: expect.objectContaining({ param: 'messages.0.content' }) }) }),
    );
  });

  it('keeps other values as parsed, without walking them: a 100k-key object costs nothing', () => {
    for (const field of ['metadata', 'unknown_field']) {
      const { value, touches } = watched(100_000);
      const out = validate({ max_tokens: 2, messages: [], [field]: value }) as Record<string, unknown>;
      expect(out[field]).toBe(value);
      // IsObject looks at the value; nothing lists or reads its 100k keys.
      expect(touches()).toBe(0);
    }
  });

  it('refuses a nested field of the wrong shape (a list for an object, an object for a list), which ValidateNested lets through', () => {
    const param = (body: unknown): unknown => {
      try {
        validate(body);
      } catch (err) {
        return (err as { response: { error: { param: unknown } } }).response.error.param;
      }
      return 'accepted';
    };
    expect(param({ max_tokens: 1, messages: [], first: [] })).toBe('first');
    expect(param({ max_tokens: 1, messages: { content: 'x' } })).toBe('messages');
    expect(param({ max_tokens: 1, messages: [{ content: 'x' }], first: null })).toBe('accepted');
  });

  it('answers a missing or non-object body 400 on param body', () => {
    for (const body of [undefined, null, [1], 'text', 3]) {
      expect(() => validate(body)).toThrow(expect.objectContaining({ response: expect.objectContaining({ error: expect.objectContaining({ param: 'body', code: 400 }) }) }));
    }
  });

  it('refuses DTOs that rely on class-transformer features it does not apply', () => {
    class WithTransform {
      @IsString()
      @Transform(({ value }) => String(value))
      name!: string;
    }
    expect(() => toDtoInstance(WithTransform, { name: 'x' })).toThrow(/@Transform is not supported/);
  });
});

describe('sendJson', () => {
  it('writes large responses in pieces that add up to exactly JSON.stringify', async () => {
    const fastify = Fastify();
    const bodies: Record<string, unknown> = {
      tokens: { count: 70_000, tokens: Array.from({ length: 70_000 }, (_, i) => i % 977), token_strs: null },
      nested: {
        id: 'x',
        choices: Array.from({ length: 3 }, (_, i) => ({
          index: i,
          text: `t"${i}\n`,
          skipped: undefined,
          logprobs: { tokens: Array.from({ length: 9000 }, (_, j) => `w${j}`), top_logprobs: Array.from({ length: 9000 }, (_, j) => ({ [`a${j}`]: -j / 3 })) },
        })),
        usage: { prompt_tokens: 1, list: [1, undefined, null, 'é'] },
      },
      small: { a: 1, b: [1, 2, 3] },
    };
    fastify.get('/:name', async (request, reply) => sendJson(reply, bodies[(request.params as { name: string }).name]));
    try {
      for (const [name, body] of Object.entries(bodies)) {
        const res = await fastify.inject({ method: 'GET', url: `/${name}` });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect([name, res.body === JSON.stringify(body)]).toEqual([name, true]);
      }
    } finally {
      await fastify.close();
    }
  });
});
