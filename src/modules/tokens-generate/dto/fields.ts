// The two field decorators the generate DTOs need beyond src/common/dto/api-field.ts: a nested
// DTO (object or list) and a prompt of token ids. Same idea: rule and schema in one decorator.

import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsDefined, IsOptional, ValidateNested } from 'class-validator';
import { Check, type FieldSpec } from '../../../common/dto/api-field';

/** Required fields need IsDefined: ValidateNested alone lets an absent value through. */
const presence = (required: boolean | undefined): PropertyDecorator[] => (required ? [IsDefined()] : [IsOptional()]);
const nullable = (required: boolean | undefined) => (required ? { required: true } : { required: false, nullable: true });

/** A nested DTO, validated recursively; `isArray` for a list of them. */
export function NestedField(type: () => new () => object, spec: FieldSpec & { isArray?: boolean }): PropertyDecorator {
  const { isArray = false, required, ...doc } = spec;
  return applyDecorators(
    ...presence(required),
    ...(isArray ? [IsArray()] : []),
    ValidateNested({ each: isArray }),
    Type(type),
    ApiProperty({ type, isArray, ...doc, ...nullable(required) }),
  );
}

const isTokenId = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0;

/** A non-empty list of token ids (integers >= 0), as vLLM's `token_ids: list[int] = Field(min_length=1)`. */
export function TokenIdsField(spec: FieldSpec): PropertyDecorator {
  const { required, ...doc } = spec;
  return applyDecorators(
    ...presence(required),
    Check('isTokenIdList', (v) => Array.isArray(v) && v.every(Number.isInteger), '$property must be a list of integers'),
    Check('isNonEmpty', (v) => Array.isArray(v) && v.length > 0, '$property must contain at least 1 item'),
    Check('isNonNegative', (v) => Array.isArray(v) && v.every((id) => !Number.isInteger(id) || isTokenId(id)), '$property must not contain negative values'),
    ApiProperty({ type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1, ...doc, ...nullable(required) }),
  );
}
