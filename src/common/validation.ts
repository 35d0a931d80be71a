// The global ValidationPipe: class-validator failures become a 400 envelope with
// `type: "Bad Request"` (as vLLM's RequestValidationError handler sends) and `param` naming
// the first offending field (dotted path for nested fields, e.g. "messages.0.content").

import { BadRequestException, ValidationError, ValidationPipe } from '@nestjs/common';
import { buildErrorBody, httpPhrase } from '../serving/openai-error';

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

export function validationExceptionFactory(errors: ValidationError[]): BadRequestException {
  return badRequestForFields(flatten(errors));
}

/** vLLM's 400 for invalid fields: "N validation error(s):" and one line per field (at most 10). */
export function badRequestForFields(fields: FieldError[]): BadRequestException {
  const n = fields.length;
  const listed = fields.slice(0, MAX_LISTED).map((f) => `  ${f.path}: ${f.message}`);
  const message = `${n} validation error${n === 1 ? '' : 's'}:\n${listed.join('\n')}`;
  const body = buildErrorBody(message, 400, fields[0]?.path ?? null, httpPhrase(400));
  return new BadRequestException(body);
}

/** transform: DTO classes with defaults; unknown fields are ignored (vLLM uses extra="allow"). */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    transform: true,
    whitelist: false,
    forbidUnknownValues: false,
    exceptionFactory: validationExceptionFactory,
  });
}
