// Multipart form values arrive as strings: these wrap the shared field decorators (validation +
// OpenAPI schema from one description) with the conversion from the form's text, so "0.2" is
// checked as a number and "true" as a boolean. Text that does not convert is left as is and fails
// the field's validation with its usual message.

import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { BoolField, EnumField, FieldSpec, IntField, NumberField, ObjectField, StringField } from '../../../common/dto/api-field';

const lastValue = (value: unknown): unknown => (Array.isArray(value) ? value[value.length - 1] : value);

const toNumber = ({ value }: { value: unknown }): unknown => {
  const v = lastValue(value);
  return typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v;
};

const toBoolean = ({ value }: { value: unknown }): unknown => {
  const v = lastValue(value);
  return v === 'true' ? true : v === 'false' ? false : v;
};

const toJsonObject = ({ value }: { value: unknown }): unknown => {
  const v = lastValue(value);
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

const toList = ({ value }: { value: unknown }): unknown => (Array.isArray(value) ? value : typeof value === 'string' ? [value] : value);

export const FormNumberField = (spec: FieldSpec) => applyDecorators(Transform(toNumber), NumberField(spec));
export const FormIntField = (spec: FieldSpec) => applyDecorators(Transform(toNumber), IntField(spec));
export const FormBoolField = (spec: FieldSpec) => applyDecorators(Transform(toBoolean), BoolField(spec));
export const FormStringField = (spec: FieldSpec) => applyDecorators(Transform(({ value }) => lastValue(value)), StringField(spec));
export const FormEnumField = (values: readonly string[], spec: FieldSpec) => applyDecorators(Transform(({ value }) => lastValue(value)), EnumField(values, spec));
/** A JSON object sent as text (vllm_xargs), parsed as vLLM does. */
export const FormJsonObjectField = (spec: FieldSpec) => applyDecorators(Transform(toJsonObject), ObjectField(spec));
/** A repeated field (`timestamp_granularities[]`): one value or several. */
export const FormListTransform = () => Transform(toList);
