// The one validation point for request bodies: the body becomes an instance of the route's DTO
// class, class-validator checks it, and failures become a 400 envelope with `type: "Bad Request"`
// (as vLLM's RequestValidationError handler sends) and `param` naming the first offending field
// (dotted path for nested fields, e.g. "messages.0.content").
//
// The DTO instance is built here, not by class-transformer's plainToInstance: that walks every
// nested plain object and de-duplicates each one's keys with an O(n²) scan, so one
// `{"metadata": {100k keys}}` froze the server for seconds. Here the cost is linear: declared
// nested DTOs (@Type, as NestedField sets it) become instances recursively, every other value is
// kept as the parsed JSON it is, without being walked. The parser's depth limit bounds recursion.

import { ArgumentMetadata, BadRequestException, PipeTransform, ValidationError } from '@nestjs/common';
import type { MetadataStorage as TransformerMetadataStorage } from 'class-transformer/types/MetadataStorage';
import { getMetadataStorage, validateSync } from 'class-validator';
import { buildErrorBody, httpPhrase } from '../serving/openai-error';
import { passesValidation } from './validation-fast-path';

// class-transformer keeps its @Type() metadata in this singleton; it has no typed public export.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const transformerMetadata = (require('class-transformer/cjs/storage') as { defaultMetadataStorage: TransformerMetadataStorage }).defaultMetadataStorage;

export interface FieldError {
  /** Dotted path of the field, e.g. "messages.0.content". */
  path: string;
  message: string;
}

function flatten(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const path = prefix ? `${prefix}.${e.property}` : e.property;
    for (const message of Object.values(e.constraints ?? {})) out.push({ path, message });
    if (e.children?.length) out.push(...flatten(e.children, path));
  }
  return out;
}

/** vLLM caps the listed errors at 10. */
const MAX_LISTED = 10;

/** vLLM's 400 for invalid fields: "N validation error(s):" and one line per field (at most 10). */
export function badRequestForFields(fields: FieldError[]): BadRequestException {
  const n = fields.length;
  const listed = fields.slice(0, MAX_LISTED).map((f) => `  ${f.path}: ${f.message}`);
  const message = `${n} validation error${n === 1 ? '' : 's'}:\n${listed.join('\n')}`;
  return new BadRequestException(buildErrorBody(message, 400, fields[0]?.path ?? null, httpPhrase(400)));
}

export function validationExceptionFactory(errors: ValidationError[]): BadRequestException {
  return badRequestForFields(flatten(errors));
}

type DtoClass = new () => object;

/** A declared nested DTO field: its class, and whether it holds a list of them. */
interface NestedField {
  type: DtoClass;
  list: boolean;
}

/** The nested DTO fields of a DTO's declared properties, found once per class. */
const nestedFieldsByClass = new Map<DtoClass, Map<string, NestedField>>();

function nestedFields(cls: DtoClass): Map<string, NestedField> {
  let nested = nestedFieldsByClass.get(cls);
  if (nested) return nested;
  nested = new Map();
  if (transformerMetadata.getExposedMetadatas(cls).length > 0 || transformerMetadata.getExcludedMetadatas(cls).length > 0) {
    throw new Error(`${cls.name}: @Expose/@Exclude are not supported by the request validation (src/common/validation.ts)`);
  }
  const rules = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
  for (const property of new Set(rules.map((m) => m.propertyName))) {
    if (transformerMetadata.findTransformMetadatas(cls, property, 0 /* PLAIN_TO_CLASS */).length > 0) {
      throw new Error(`${cls.name}.${property}: @Transform is not supported by the request validation (src/common/validation.ts)`);
    }
    const type = transformerMetadata.findTypeMetadata(cls, property);
    if (!type) continue;
    if (type.options?.discriminator) {
      throw new Error(`${cls.name}.${property}: @Type discriminators are not supported by the request validation (src/common/validation.ts)`);
    }
    const target = (type.typeFunction ? type.typeFunction() : type.reflectedType) as DtoClass;
    if (typeof target !== 'function' || target === Object || target === Array) continue;
    const list = rules.some((m) => m.propertyName === property && m.type === 'nestedValidation' && m.each === true);
    nested.set(property, { type: target, list });
  }
  nestedFieldsByClass.set(cls, nested);
  return nested;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A `cls` instance holding the body's own fields; nested DTO fields (an object, or a list of
 * them) become instances too. A nested field of the wrong shape (a list where an object belongs,
 * or the other way round; class-validator's ValidateNested would let a list through) is added to
 * `shapeErrors` and kept as sent.
 */
export function toDtoInstance(cls: DtoClass, plain: Record<string, unknown>, shapeErrors: FieldError[] = [], path = ''): object {
  const instance = new cls() as Record<string, unknown>;
  const nested = nestedFields(cls);
  for (const key of Object.keys(plain)) {
    const value = plain[key];
    const field = nested.get(key);
    instance[key] = value;
    if (field === undefined || value === null || value === undefined) continue;
    const at = `${path}${key}`;
    if (field.list) {
      if (!Array.isArray(value)) shapeErrors.push({ path: at, message: `${key} must be a list` });
      else instance[key] = value.map((item: unknown, i) => (isPlainObject(item) ? toDtoInstance(field.type, item, shapeErrors, `${at}.${i}.`) : item));
    } else if (isPlainObject(value)) {
      instance[key] = toDtoInstance(field.type, value, shapeErrors, `${at}.`);
    } else {
      shapeErrors.push({ path: at, message: `${key} must be an object` });
    }
  }
  return instance;
}

function isDtoClass(metatype: unknown): metatype is DtoClass {
  return typeof metatype === 'function' && ![String, Boolean, Number, Array, Object].includes(metatype as never);
}

/** Validates `@Body()` parameters typed with a DTO class; other parameters pass through. */
export class RequestValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'body' || !isDtoClass(metadata.metatype)) return value;
    if (value === undefined || value === null) {
      throw badRequestForFields([{ path: 'body', message: 'Field required: send a JSON object body' }]);
    }
    if (!isPlainObject(value)) throw badRequestForFields([{ path: 'body', message: 'Input should be a JSON object' }]);
    const shapeErrors: FieldError[] = [];
    const instance = toDtoInstance(metadata.metatype, value, shapeErrors);
    if (shapeErrors.length > 0) throw badRequestForFields(shapeErrors);
    // Bodies that pass skip validateSync's per-call setup; the others get its errors as before.
    if (passesValidation(instance) === true) return instance;
    const errors = validateSync(instance, { forbidUnknownValues: false, whitelist: false });
    if (errors.length > 0) throw validationExceptionFactory(errors);
    return instance;
  }
}
