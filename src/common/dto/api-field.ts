// One decorator per request field: the class-validator rule and the @ApiProperty schema are
// built from the same description, so validation and the OpenAPI spec cannot drift (the idea
// of immich's validation.ts). Every field is optional unless `required`; null means "not sent".

import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsDefined, IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, ValidateBy, ValidateNested, ValidationOptions } from 'class-validator';

type Schema = Record<string, unknown>;

export interface FieldSpec {
  description: string;
  /** The value vLLM uses when the field is absent (documentation only: sent-field tracking needs absence). */
  default?: unknown;
  required?: boolean;
  example?: unknown;
}

/** A field from its description, its schema and its class-validator rules (the helpers below, and any DTO's own). */
export function field(spec: FieldSpec, schema: Schema, rules: PropertyDecorator[]): PropertyDecorator {
  const { required = false, ...doc } = spec;
  return applyDecorators(
    ...(required ? [] : [IsOptional()]),
    ...rules,
    ApiProperty({ ...schema, ...doc, required, ...(required ? {} : { nullable: true }) }),
  );
}

/** A custom rule: `check` returns true when the value is acceptable. */
export function Check(name: string, check: (value: unknown) => boolean, message: string, opts?: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name, validator: { validate: check, defaultMessage: () => message } }, opts);
}

export const BoolField = (spec: FieldSpec) => field(spec, { type: 'boolean' }, [IsBoolean()]);
export const IntField = (spec: FieldSpec) => field(spec, { type: 'integer' }, [IsInt()]);
export const NumberField = (spec: FieldSpec) => field(spec, { type: 'number' }, [IsNumber({ allowNaN: false, allowInfinity: false })]);
export const StringField = (spec: FieldSpec) => field(spec, { type: 'string' }, [IsString()]);
export const EnumField = (values: readonly string[], spec: FieldSpec) =>
  field(spec, { type: 'string', enum: values }, [IsIn(values as string[], { message: `$property must be one of ${values.join(', ')}` })]);
/** A JSON object passed through (kv_transfer_params, chat_template_kwargs, …). */
export const ObjectField = (spec: FieldSpec, additionalProperties: unknown = true) =>
  field(spec, { type: 'object', additionalProperties }, [IsObject()]);

const isInt = (v: unknown) => Number.isInteger(v);
const isIntList = (v: unknown) => Array.isArray(v) && v.every(isInt);
const isStringList = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === 'string');

export const IntListField = (spec: FieldSpec) =>
  field(spec, { type: 'array', items: { type: 'integer' } }, [Check('isIntList', isIntList, '$property must be a list of integers')]);
export const StringListField = (spec: FieldSpec) =>
  field(spec, { type: 'array', items: { type: 'string' } }, [Check('isStringList', isStringList, '$property must be a list of strings')]);
/** A list of JSON values whose items the serving layer checks (messages, documents, tools). */
export const JsonListField = (spec: FieldSpec, items: Schema = { type: 'object', additionalProperties: true }) =>
  field(spec, { type: 'array', items }, [Check('isList', Array.isArray, '$property must be a list')]);
/** Any JSON value; the serving layer refuses it when present (features not supported yet). */
export const AnyField = (spec: FieldSpec, schema: Schema = {}) => field(spec, schema, []);

/**
 * A nested DTO (or, with `isArray`, a list of them), validated recursively. `type` is lazy so
 * classes may refer to each other in any order.
 */
export function NestedField(type: () => new () => object, spec: FieldSpec & { isArray?: boolean }): PropertyDecorator {
  const { isArray = false, ...rest } = spec;
  return field(
    rest,
    // @nestjs/swagger recognises a lazy type only by the function's name being `type`: a
    // function passed in from outside has another name and becomes a dangling `$ref`, so the
    // schema gets an arrow function written here, as an object property called `type`.
    { type: () => type(), isArray },
    // A required one needs IsDefined: ValidateNested alone lets an absent value through.
    [...(spec.required ? [IsDefined()] : []), ...(isArray ? [IsArray()] : []), ValidateNested({ each: isArray }), Type(type)],
  );
}

/** A string or a list of strings (`stop`, score texts, …). */
export const StringOrListField = (spec: FieldSpec) =>
  field(spec, { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] }, [
    Check('isStringOrList', (v) => typeof v === 'string' || isStringList(v), '$property must be a string or a list of strings'),
  ]);
export const StopField = StringOrListField;

/** Completion `prompt`: string | string[] | int[] | int[][]. */
export const PromptField = (spec: FieldSpec) =>
  field(
    spec,
    {
      oneOf: [
        { type: 'string' },
        { type: 'array', items: { type: 'string' } },
        { type: 'array', items: { type: 'integer' } },
        { type: 'array', items: { type: 'array', items: { type: 'integer' } } },
      ],
    },
    [
      Check(
        'isPrompt',
        (v) => typeof v === 'string' || isStringList(v) || isIntList(v) || (Array.isArray(v) && v.every(isIntList)),
        '$property must be a string, a list of strings, a list of token ids or a list of token-id lists',
      ),
    ],
  );

/** logit_bias: {token_id: bias}. */
export const LogitBiasField = (spec: FieldSpec) =>
  field(spec, { type: 'object', additionalProperties: { type: 'number' } }, [
    Check(
      'isLogitBias',
      (v) => !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'number'),
      '$property must map token ids to numbers',
    ),
  ]);
