// The validation fast path (src/common/validation-fast-path.ts) must agree with class-validator's
// validateSync on every body: "passes" exactly where validateSync finds no error. Checked on the
// app's real request DTOs with every declared field (nested DTOs too) given values of each JSON
// type, one field at a time and in seeded random combinations.

import type { Type } from '@nestjs/common';
import { IsIn, IsInt, IsOptional, Validate, ValidateIf, ValidatorConstraint, validateSync, type ValidatorConstraintInterface } from 'class-validator';
import { declaredFields } from '../../../src/common/unknown-fields';
import { passesValidation } from '../../../src/common/validation-fast-path';
import { RequestValidationPipe, toDtoInstance, type FieldError } from '../../../src/common/validation';
import { ChatRequestDto } from '../../../src/modules/chat/dto/chat-request.dto';
import { ClassifyRequestDto } from '../../../src/modules/classify/dto/classify-request.dto';
import { CompletionRequestDto } from '../../../src/modules/completions/dto/completion-request.dto';
import { EmbeddingRequestDto } from '../../../src/modules/embeddings/dto/embedding-request.dto';
import { PoolingRequestDto } from '../../../src/modules/pooling/dto/pooling-request.dto';
import { ResponsesRequestDto } from '../../../src/modules/responses/dto/responses-request.dto';
import { RerankRequestDto, ScoreRequestDto } from '../../../src/modules/score/dto/score-request.dto';
import { DetokenizeRequestDto, TokenizeRequestDto } from '../../../src/modules/tokenize/dto/tokenize-request.dto';
import { GenerateRequestDto } from '../../../src/modules/tokens-generate/dto/generate-request.dto';

const SCALARS: unknown[] = [null, 0, 1, -1, 1.5, 1e9, 'a', '', 'auto', 'none', 'required', 'float', 'base64', 'user', 'text', 'word', true, false];
const LISTS: unknown[] = [[], [1], [1, 2], [-1], [1.5], ['a'], ['a', 'b'], [''], [[1, 2]], [['a']], ['segment', 'word'], ['segment'], ['word', 'x'], [null], [true], [{}]];
const OBJECTS: unknown[] = [{}, { a: 1 }, { 1: 2.5 }, { type: 'text', text: 'hi' }, { role: 'user', content: 'hi' }];

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Values for one field: every JSON type, and for a nested DTO field bodies of that DTO (one level, a list and not). */
function valuesFor(nested: Type | null, random: () => number, depth: number): unknown[] {
  const out = [...SCALARS, ...LISTS, ...OBJECTS];
  if (nested && depth < 2) {
    for (const body of bodiesFor(nested, random, depth + 1, 12)) out.push(body, [body], [body, body]);
  }
  return out;
}

/** Bodies for `type`: empty, each field alone with each value, then random mixes of 1-4 fields (half of them on `base`). */
function bodiesFor(type: Type, random: () => number, depth = 0, mixes = 300, base: Record<string, unknown> = {}): Array<Record<string, unknown>> {
  const fields = [...declaredFields(type)];
  const values = new Map(fields.map(([name, nested]) => [name, valuesFor(nested, random, depth)]));
  const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)];
  const bodies: Array<Record<string, unknown>> = [{}];
  if (depth === 0) for (const [name] of fields) for (const value of values.get(name)!) bodies.push({ [name]: value });
  for (let i = 0; i < mixes; i++) {
    const body: Record<string, unknown> = random() < 0.5 ? { ...base } : {};
    const n = 1 + Math.floor(random() * 4);
    for (let j = 0; j < n; j++) {
      const [name] = pick(fields);
      body[name] = pick(values.get(name)!);
    }
    bodies.push(body);
  }
  return bodies;
}

function agree(type: Type, bodies: Array<Record<string, unknown>>): { checked: number; passing: number } {
  let checked = 0;
  let passing = 0;
  for (const body of bodies) {
    const shapeErrors: FieldError[] = [];
    const instance = toDtoInstance(type as new () => object, body, shapeErrors);
    if (shapeErrors.length > 0) continue;
    const expected = validateSync(instance, { forbidUnknownValues: false, whitelist: false }).length === 0;
    const verdict = passesValidation(instance);
    if (verdict !== expected) throw new Error(`${type.name} ${JSON.stringify(body)}: fast path ${verdict}, validateSync ${expected}`);
    checked++;
    if (expected) passing++;
  }
  return { checked, passing };
}

class EachRules {
  @IsOptional()
  @IsIn(['segment', 'word'], { each: true })
  granularities?: string[];

  @IsOptional()
  @IsInt({ each: true })
  ids?: number[];
}

describe('validation fast path', () => {
  // Each DTO with a body that has its required fields, for the random mixes to build on.
  const dtos: Array<[Type, Record<string, unknown>]> = [
    [CompletionRequestDto, { prompt: 'x' }],
    [ChatRequestDto, { messages: [{ role: 'user', content: 'hi' }] }],
    [EmbeddingRequestDto, { input: 'x' }],
    [PoolingRequestDto, { input: 'x' }],
    [ClassifyRequestDto, { input: 'x' }],
    [ScoreRequestDto, { text_1: 'a', text_2: 'b' }],
    [RerankRequestDto, { query: 'q', documents: ['a'] }],
    [TokenizeRequestDto, { prompt: 'x' }],
    [DetokenizeRequestDto, { tokens: [1] }],
    [GenerateRequestDto, { token_ids: [1], sampling_params: {} }],
    [ResponsesRequestDto, { input: 'x' }],
    // Rules with { each: true } on a list's items (the app's one, on transcriptions, comes from a multipart form).
    [EachRules, {}],
  ];

  it.each(dtos.map(([dto, base]) => [dto.name, dto, base] as const))('agrees with validateSync on %s bodies', (_name, dto, base) => {
    const { checked, passing } = agree(dto, bodiesFor(dto, seeded(dto.name.length * 7919), 0, 300, base));
    // Both verdicts occur, so neither side is vacuous.
    expect(checked).toBeGreaterThan(200);
    expect(passing).toBeGreaterThan(0);
    expect(passing).toBeLessThan(checked);
  });

  it('valid bodies of the main routes pass without validateSync and keep their values', () => {
    const completion = toDtoInstance(CompletionRequestDto, { model: 'm', prompt: 'Once upon a time', max_tokens: 8, stream: true, temperature: 0 });
    expect(passesValidation(completion)).toBe(true);
    const chat = toDtoInstance(ChatRequestDto, { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } });
    expect(passesValidation(chat)).toBe(true);
    const embedding = toDtoInstance(EmbeddingRequestDto, { model: 'm', input: ['a', 'b'], encoding_format: 'base64' });
    expect(passesValidation(embedding)).toBe(true);
  });

  it('an invalid body still gets the class-validator error from the pipe', () => {
    const pipe = new RequestValidationPipe();
    expect(passesValidation(toDtoInstance(CompletionRequestDto, { prompt: 'x', max_tokens: 'many' }))).toBe(false);
    try {
      pipe.transform({ prompt: 'x', max_tokens: 'many' }, { type: 'body', metatype: CompletionRequestDto });
      throw new Error('no error');
    } catch (err) {
      const body = (err as { getResponse(): { error: { param: string; message: string } } }).getResponse();
      expect(body.error.param).toBe('max_tokens');
      expect(body.error.message).toMatch(/^1 validation error:\n {2}max_tokens: /);
    }
  });

  it('runs ValidateIf conditions as validateSync does, and leaves async constraints to it', () => {
    class Conditional {
      @ValidateIf((o: { kind?: string }) => o.kind === 'n')
      @IsInt()
      n?: unknown;

      @IsOptional()
      kind?: string;
    }
    const cases = [{ kind: 'n', n: 2 }, { kind: 'n', n: 'x' }, { kind: 's', n: 'x' }, { kind: 'n' }];
    expect(cases.map((body) => passesValidation(Object.assign(new Conditional(), body)))).toEqual([true, false, true, false]);
    expect(agree(Conditional, cases).checked).toBe(4);

    @ValidatorConstraint({ async: true })
    class Later implements ValidatorConstraintInterface {
      validate(): Promise<boolean> {
        return Promise.resolve(true);
      }
    }
    class Remote {
      @Validate(Later)
      id?: string;
    }
    expect(passesValidation(Object.assign(new Remote(), { id: 'a' }))).toBeNull();
  });
});
