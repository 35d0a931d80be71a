// `phi4_mini_json`: Phi-4-mini writes its calls as a JSON array after the word `functools`:
//   functools[{"name": "f", "arguments": {...}}, {"name": "g", "parameters": {...}}]
// Text before `functools` is content. The array is read with a JSON scanner (not a regex), so
// arguments holding arrays or `]` inside strings stay whole, and calls stream as they are written.

import { scanCallArray } from './call-object';
import { beforeTag, ScanningToolParser, type ScanResult } from './scanning-tool-parser';

const BOT = 'functools';
const ARGUMENT_KEYS = ['arguments', 'parameters'];

export class Phi4MiniJsonToolParser extends ScanningToolParser {
  protected scan(text: string, final: boolean): ScanResult {
    const at = text.indexOf(BOT);
    if (at < 0) return beforeTag(text, BOT, final);
    const content = text.slice(0, at);
    const open = at + BOT.length;
    if (open >= text.length) return { content, calls: [], malformed: final };
    if (text[open] !== '[') return { content, calls: [], malformed: true };
    const list = scanCallArray(text, open, ARGUMENT_KEYS);
    return { content, calls: list.calls, malformed: list.malformed || (final && list.end < 0) };
  }
}
