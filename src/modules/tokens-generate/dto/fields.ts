// The field decorator the generate DTOs need beyond src/common/dto/api-field.ts: a prompt of
// token ids. Same idea: rule and schema in one decorator.

import { Check, field, type FieldSpec } from '../../../common/dto/api-field';

const isTokenId = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0;

/** A non-empty list of token ids (integers >= 0), as vLLM's `token_ids: list[int] = Field(min_length=1)`. */
export function TokenIdsField(spec: FieldSpec): PropertyDecorator {
  return field(spec, { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 }, [
    Check('isTokenIdList', (v) => Array.isArray(v) && v.every(Number.isInteger), '$property must be a list of integers'),
    Check('isNonEmpty', (v) => Array.isArray(v) && v.length > 0, '$property must contain at least 1 item'),
    Check('isNonNegative', (v) => Array.isArray(v) && v.every((id) => !Number.isInteger(id) || isTokenId(id)), '$property must not contain negative values'),
  ]);
}
