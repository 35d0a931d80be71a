// `phi4_mini_json`: Phi-4-mini writes its calls as `functools` and a JSON array of call objects,
//   functools[{"name": "f", "arguments": {...}}, {"name": "g", "parameters": {...}}]
// ("arguments", else "parameters", as vLLM's parser reads them). Text before `functools` is
// content; text after the array is dropped. Unlike vLLM's (which returns nothing while
// streaming), calls stream as they are written.

import { scanCallArray } from './call-object';
import { skipWhitespace } from './json-scan';
import { beforeTag, ScanningToolParser, type ScanResult } from './scanning-tool-parser';

const BOT = 'functools';
const ARGUMENT_KEYS = ['arguments', 'parameters'];

export class Phi4MiniJsonToolParser extends ScanningToolParser {
  protected scan(text: string, final: boolean): ScanResult {
    const at = text.indexOf(BOT);
    if (at < 0) return beforeTag(text, BOT, final);
    const content = text.slice(0, at);
    const open = skipWhitespace(text, at + BOT.length);
    if (open >= text.length) return { content, calls: [], malformed: final };
    if (text[open] !== '[') return { content, calls: [], malformed: true };
    const list = scanCallArray(text, open, ARGUMENT_KEYS);
    // An empty list is no call: the text stays content.
    return { content, calls: list.calls, malformed: list.malformed || (final && (list.end < 0 || list.calls.length === 0)) };
  }
}
