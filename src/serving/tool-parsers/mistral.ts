// `mistral`: Mistral models write text, then [TOOL_CALLS] and the calls. Tokenizers before v11:
//   [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]
// v11 and later, one [TOOL_CALLS] per call:
//   [TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g{...}
// The form is told apart by the text (an array follows, or a name does). Ids are 9 alphanumeric
// characters, because Mistral's own chat templates refuse any other.

import { randomInt } from 'node:crypto';
import { scanCallArray } from './call-object';
import { jsonValueEnd, skipWhitespace, tryParseJson } from './json-scan';
import { beforeTag, ScanningToolParser, type ScanResult, type ScannedCall } from './scanning-tool-parser';

const BOT = '[TOOL_CALLS]';
const ARGS = '[ARGS]';
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function mistralToolCallId(): string {
  let id = '';
  for (let i = 0; i < 9; i++) id += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return id;
}

export class MistralToolParser extends ScanningToolParser {
  static readonly keepsSpecialTokens = true;

  protected newCallId(): string {
    return mistralToolCallId();
  }

  protected scan(text: string, final: boolean): ScanResult {
    const at = text.indexOf(BOT);
    if (at < 0) return beforeTag(text, BOT, final);
    const content = text.slice(0, at);
    const first = skipWhitespace(text, at + BOT.length);
    if (first >= text.length) return { content, calls: [], malformed: final };
    if (text[first] === '[' && !text.startsWith(ARGS, first)) {
      const list = scanCallArray(text, first, ['arguments']);
      return { content, calls: list.calls, malformed: list.malformed || (final && list.end < 0) };
    }
    return { content, ...this.scanNamedCalls(text, at, final) };
  }

  /** v11+: `[TOOL_CALLS]name[ARGS]{args}` (or `name{args}`), repeated. */
  private scanNamedCalls(text: string, at: number, final: boolean): Omit<ScanResult, 'content'> {
    const calls: ScannedCall[] = [];
    const done = (malformed: boolean) => ({ calls, malformed });
    while (at >= 0) {
      const nameStart = at + BOT.length;
      const brace = text.indexOf('{', nameStart);
      const argsTag = text.indexOf(ARGS, nameStart);
      const nameEnd = argsTag >= 0 && (brace < 0 || argsTag < brace) ? argsTag : brace;
      if (nameEnd < 0) {
        calls.push({ name: null, arguments: '', argumentsComplete: false, streamable: true });
        return done(final);
      }
      const name = text.slice(nameStart, nameEnd).trim();
      if (!/^[\w.-]+$/.test(name)) return done(true);
      const argsStart = skipWhitespace(text, nameEnd === argsTag ? argsTag + ARGS.length : nameEnd);
      const call: ScannedCall = { name, arguments: '', argumentsComplete: false, streamable: true };
      calls.push(call);
      if (argsStart >= text.length) return done(final);
      if (text[argsStart] !== '{' && text[argsStart] !== '[') return done(true);
      const argsEnd = jsonValueEnd(text, argsStart);
      call.arguments = text.slice(argsStart, argsEnd < 0 ? text.length : argsEnd);
      if (argsEnd < 0) return done(final);
      if (!tryParseJson(call.arguments).ok) return done(true);
      call.argumentsComplete = true;
      at = text.indexOf(BOT, argsEnd);
    }
    return done(false);
  }
}
