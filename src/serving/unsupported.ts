// Request fields whose features come with later work: refused with 400 rather than silently
// ignored, so a client never believes e.g. structured output was applied.

import { RequestValidationError } from '../engine/errors';

export function notSupportedYet(param: string, what = `\`${param}\``): never {
  throw new RequestValidationError(`${what} is not supported by this server yet.`, param);
}

/** Values that ask for nothing beyond plain generation, which clients often send by default. */
const NO_OP_VALUES: Record<string, (value: unknown) => boolean> = {
  tools: (v) => Array.isArray(v) && v.length === 0,
  tool_choice: (v) => v === 'none',
};

/** Throws for the first of `fields` that is present (non-null, not a no-op value) in `body`. */
export function rejectUnsupportedFields(body: Record<string, unknown>, fields: readonly string[]): void {
  for (const field of fields) {
    const value = body[field];
    if (value === undefined || value === null || NO_OP_VALUES[field]?.(value)) continue;
    notSupportedYet(field);
  }
}

export const UNSUPPORTED_COMMON_FIELDS = ['prompt_embeds'] as const;
export const UNSUPPORTED_CHAT_FIELDS = [...UNSUPPORTED_COMMON_FIELDS, 'tools', 'tool_choice'] as const;
