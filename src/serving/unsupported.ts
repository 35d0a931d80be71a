// Request fields whose features come with later work: refused with 400 rather than silently
// ignored, so a client never believes e.g. structured output was applied.

import { RequestValidationError } from '../engine/errors';

export function notSupportedYet(param: string, what = `\`${param}\``): never {
  throw new RequestValidationError(`${what} is not supported by this server yet.`, param);
}

/** Throws for the first of `fields` that is present (non-null) in `body`. */
export function rejectUnsupportedFields(body: Record<string, unknown>, fields: readonly string[]): void {
  for (const field of fields) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    notSupportedYet(field);
  }
}

export const UNSUPPORTED_COMMON_FIELDS = ['prompt_embeds'] as const;
