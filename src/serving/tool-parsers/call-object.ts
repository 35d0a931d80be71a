// The `{"name": "...", "arguments": {...}}` object most JSON tool-call formats share (Hermes,
// Llama 3 JSON, Mistral before v11, and the array `tool_choice: "required"` constrains to),
// read as far as the text goes. Arguments are the model's own JSON text, sliced, not re-encoded,
// so streamed fragments add up to exactly the non-streamed arguments.

import { jsonValueEnd, scanObject, skipWhitespace, tryParseJson } from './json-scan';
import type { ScannedCall } from './scanning-tool-parser';

export interface ScannedCallObject {
  call: ScannedCall;
  /** Index just past the object; -1 while it is open. */
  end: number;
  malformed: boolean;
}

/** Reads the call object starting at `start` (a '{'); `argumentKeys` in order of preference. */
export function scanCallObject(text: string, start: number, argumentKeys: readonly string[]): ScannedCallObject {
  const object = scanObject(text, start);
  const call: ScannedCall = { name: null, arguments: '', argumentsComplete: false, streamable: true };
  const result = (malformed: boolean): ScannedCallObject => ({ call, end: object.end, malformed });
  if (object.malformed) return result(true);

  const nameMember = object.members.find((m) => m.key === 'name');
  if (nameMember && nameMember.valueEnd >= 0) {
    const name = tryParseJson(text.slice(nameMember.valueStart, nameMember.valueEnd));
    if (!name.ok || typeof name.value !== 'string' || name.value === '') return result(true);
    call.name = name.value;
  }
  const argsMember = object.members.find((m) => argumentKeys.includes(m.key));
  if (argsMember) {
    const end = argsMember.valueEnd < 0 ? text.length : argsMember.valueEnd;
    call.arguments = text.slice(argsMember.valueStart, end);
    call.argumentsComplete = argsMember.valueEnd >= 0;
    // A string or number argument value is not JSON text that can be sent growing.
    call.streamable = /^[[{]/.test(call.arguments);
  }
  if (object.end >= 0) {
    // Complete: the whole object must be valid JSON with a name; absent arguments mean none.
    if (!tryParseJson(text.slice(start, object.end)).ok || call.name === null) return result(true);
    if (!argsMember) {
      call.arguments = '{}';
      call.argumentsComplete = true;
    }
  }
  return result(false);
}

export interface ScannedCallList {
  calls: ScannedCall[];
  /** Index just past the list's closing ']' (or the last object, for separator lists); -1 while open. */
  end: number;
  malformed: boolean;
  /** The last call's object is still open (the text stops inside it). */
  lastOpen: boolean;
}

/**
 * A JSON array of call objects starting at `start` (a '['), as far as the text goes
 * (Mistral's `[TOOL_CALLS] [...]` before v11 and `tool_choice: "required"` output).
 */
export function scanCallArray(text: string, start: number, argumentKeys: readonly string[]): ScannedCallList {
  const calls: ScannedCall[] = [];
  let i = skipWhitespace(text, start + 1);
  const result = (end: number, malformed: boolean, lastOpen = false): ScannedCallList => ({ calls, end, malformed, lastOpen });
  if (i < text.length && text[i] === ']') return result(i + 1, false);
  while (i < text.length) {
    if (text[i] !== '{') return result(-1, true);
    const object = scanCallObject(text, i, argumentKeys);
    calls.push(object.call);
    if (object.malformed || object.end < 0) return result(-1, object.malformed, object.end < 0);
    i = skipWhitespace(text, object.end);
    if (i >= text.length) break;
    if (text[i] === ']') return result(i + 1, false);
    if (text[i] !== ',') return result(-1, true);
    i = skipWhitespace(text, i + 1);
  }
  return result(-1, false);
}

/** True when `text` from `start` is one whole JSON value (whitespace around allowed). */
export function isCompleteJson(text: string): boolean {
  const start = skipWhitespace(text, 0);
  const end = jsonValueEnd(text, start);
  return end >= 0 && skipWhitespace(text, end) === text.length && tryParseJson(text).ok;
}
