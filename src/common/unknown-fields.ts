// Request-body fields a DTO does not declare. vLLM's models accept and ignore them
// (extra="allow") and log "The following fields were present in the request but ignored", so a
// user sees why an option did nothing; --unknown-request-fields reject answers 400 instead.
//
// A DTO's fields are what its decorators declare: class-validator rules (every request field has
// at least @IsOptional) and @ApiProperty. Nested DTOs (@ApiProperty type, lazy or not, single or
// list) are searched too; the result is dotted paths like validation's `param` ("stream_options.foo").
// Only the raw JSON body and this metadata are read: nothing depends on how the body is later
// turned into a DTO instance.

import { BadRequestException, Logger, type ArgumentMetadata, type PipeTransform, type Type } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger';
import { getMetadataStorage } from 'class-validator';
import type { UnknownFieldsAction } from '../config/server-config';
import { badRequestForFields } from './validation';

/** Field name -> the DTO class of its value (object or list items), or null for a plain value. */
type DeclaredFields = Map<string, Type | null>;

const declaredCache = new WeakMap<Type, DeclaredFields>();
const NOT_DTOS = new Set<unknown>([Object, Array, String, Number, Boolean, Date]);

/** A class (not a lazy `() => Class`, not a built-in) that may declare fields. */
function dtoClass(type: unknown): Type | null {
  let resolved = type;
  if (Array.isArray(resolved)) resolved = resolved[0];
  // Lazy types are arrow functions, which have no prototype; classes always have one.
  if (typeof resolved === 'function' && !('prototype' in resolved && resolved.prototype)) resolved = (resolved as () => unknown)();
  if (Array.isArray(resolved)) resolved = resolved[0];
  return typeof resolved === 'function' && !NOT_DTOS.has(resolved) ? (resolved as Type) : null;
}

export function declaredFields(type: Type): DeclaredFields {
  const cached = declaredCache.get(type);
  if (cached) return cached;
  const prototype = type.prototype as object;
  const names = new Set(getMetadataStorage().getTargetValidationMetadatas(type, '', true, false).map((rule) => rule.propertyName));
  const swaggerNames = (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, prototype) as string[] | undefined) ?? [];
  for (const name of swaggerNames) names.add(name.replace(/^:/, ''));
  const fields: DeclaredFields = new Map();
  declaredCache.set(type, fields);
  for (const name of names) {
    const property = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, prototype, name) as { type?: unknown } | undefined;
    fields.set(name, dtoClass(property?.type));
  }
  return fields;
}

/** Dotted paths of the fields in `value` (a JSON body) that `type` and its nested DTOs do not declare. */
export function findUnknownFields(value: unknown, type: Type, path = ''): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [];
  const fields = declaredFields(type);
  const unknown: string[] = [];
  for (const [key, item] of Object.entries(value)) {
    if (!fields.has(key)) {
      unknown.push(path + key);
      continue;
    }
    const nested = fields.get(key);
    if (!nested) continue;
    if (Array.isArray(item)) item.forEach((element, i) => unknown.push(...findUnknownFields(element, nested, `${path}${key}.${i}.`)));
    else unknown.push(...findUnknownFields(item, nested, `${path}${key}.`));
  }
  return unknown;
}

/** pydantic's message for a field its model forbids. */
const EXTRA_FIELD_MESSAGE = 'Extra inputs are not permitted';

/**
 * A global pipe, before validation: logs a body's undeclared fields once per request (warn, or
 * debug with `ignore`), or refuses the request with 400 (`reject`). Bodies not bound to a DTO
 * class pass untouched.
 */
export class UnknownFieldsPipe implements PipeTransform {
  private readonly logger = new Logger('UnknownFields');

  constructor(private readonly action: UnknownFieldsAction) {}

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const type = metadata.type === 'body' ? dtoClass(metadata.metatype) : null;
    if (!type || !declaredFields(type).size) return value;
    const unknown = findUnknownFields(value, type);
    if (unknown.length === 0) return value;
    if (this.action === 'reject') throw this.refusal(unknown);
    const line = `The following fields were present in the request but ignored: ${unknown.join(', ')}`;
    if (this.action === 'warn') this.logger.warn(line);
    else this.logger.debug(line);
    return value;
  }

  private refusal(unknown: string[]): BadRequestException {
    return badRequestForFields(unknown.map((path) => ({ path, message: EXTRA_FIELD_MESSAGE })));
  }
}
