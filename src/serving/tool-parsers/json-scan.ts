// Reading JSON that is still being generated: where a value ends (or that it has not ended
// yet), the top-level members of an object so far, and how much of a text's tail could be
// the start of a tag. Nothing here validates JSON; complete values are checked with JSON.parse.

export function skipWhitespace(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i])) i++;
  return i;
}

/** Index just past the string starting at `i` (a '"'), or -1 when the text ends inside it. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '"') return j + 1;
  }
  return -1;
}

/**
 * Index just past the JSON value starting at `i`, or -1 when the text ends inside it.
 * Strings, objects and arrays end where their nesting closes; numbers and literals end at the
 * next delimiter (so one at the very end of the text is still open).
 */
export function jsonValueEnd(text: string, i: number): number {
  if (i >= text.length) return -1;
  const first = text[i];
  if (first === '"') return stringEnd(text, i);
  if (first === '{' || first === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const c = text[j];
      if (c === '"') {
        j = stringEnd(text, j);
        if (j < 0) return -1;
        j--;
      } else if (c === '{' || c === '[') {
        depth++;
      } else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < text.length && !/[\s,\]}]/.test(text[j])) j++;
  return j < text.length ? j : -1;
}

export interface ObjectMember {
  key: string;
  valueStart: number;
  /** -1 while the value is still open. */
  valueEnd: number;
}

export interface ScannedObject {
  /** Members whose key is complete, in order; the last one's value may be open. */
  members: ObjectMember[];
  /** Index just past the closing '}', -1 while the object is open. */
  end: number;
  /** The text cannot continue into a JSON object. */
  malformed: boolean;
}

/** The top-level members of the object starting at `start` (a '{'), as far as the text goes. */
export function scanObject(text: string, start: number): ScannedObject {
  const members: ObjectMember[] = [];
  const open = (): ScannedObject => ({ members, end: -1, malformed: false });
  const malformed = (): ScannedObject => ({ members, end: -1, malformed: true });
  let i = start + 1;
  for (;;) {
    i = skipWhitespace(text, i);
    if (i >= text.length) return open();
    if (text[i] === '}' && members.length === 0) return { members, end: i + 1, malformed: false };
    if (text[i] !== '"') return malformed();
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return open();
    let key: string;
    try {
      key = JSON.parse(text.slice(i, keyEnd)) as string;
    } catch {
      return malformed();
    }
    i = skipWhitespace(text, keyEnd);
    if (i >= text.length) return open();
    if (text[i] !== ':') return malformed();
    i = skipWhitespace(text, i + 1);
    if (i >= text.length) return open();
    const valueEnd = jsonValueEnd(text, i);
    members.push({ key, valueStart: i, valueEnd });
    if (valueEnd < 0) return open();
    i = skipWhitespace(text, valueEnd);
    if (i >= text.length) return open();
    if (text[i] === '}') return { members, end: i + 1, malformed: false };
    if (text[i] !== ',') return malformed();
    i++;
  }
}

/** Length of the longest tail of `text` that is a proper prefix of `tag` (text that may become the tag). */
export function partialTagOverlap(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/** JSON.parse that reports failure instead of throwing. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}
