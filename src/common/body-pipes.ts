// The pipes every request body goes through, in order: its turn on the HTTP thread (see
// yield-budget.ts), the unknown-field check (on the raw JSON, see unknown-fields.ts), then
// validation into the DTO. Registered globally by the app factory; a route that picks its DTO
// from the body's content (/derender's two forms) runs them itself.

import type { ArgumentMetadata, PipeTransform, Type } from '@nestjs/common';
import type { UnknownFieldsAction } from '../config/server-config';
import { takeTurn } from '../serving/yield-budget';
import { UnknownFieldsPipe } from './unknown-fields';
import { RequestValidationPipe } from './validation';

/** Waits for the body's turn before any work on it is done (validation, rendering, tokenizing). */
class AdmissionPipe implements PipeTransform {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body') await takeTurn();
    return value;
  }
}

export function createBodyPipes(unknownFields: UnknownFieldsAction): PipeTransform[] {
  return [new AdmissionPipe(), new UnknownFieldsPipe(unknownFields), new RequestValidationPipe()];
}

/** `raw` through `pipes` as a body of type `metatype`. */
export async function validateBody<T>(pipes: PipeTransform[], raw: unknown, metatype: Type<T>): Promise<T> {
  let value: unknown = raw ?? {};
  for (const pipe of pipes) value = await (pipe.transform(value, { type: 'body', metatype }) as unknown);
  return value as T;
}
