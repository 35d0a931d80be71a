// `hermes`: Hermes 2 Pro / 3, Qwen2.5, Qwen3 (instruct) and their fine-tunes write
//   text<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call><tool_call>...</tool_call>
// Content is the text before the first <tool_call>; a final call may lack its closing tag.

import { scanCallObject } from './call-object';
import { partialTagOverlap, skipWhitespace } from './json-scan';
import { beforeTag, ScanningToolParser, type ScanResult, type ScannedCall } from './scanning-tool-parser';

const START = '<tool_call>';
const END = '</tool_call>';
const ARGUMENT_KEYS = ['arguments', 'parameters'];

export class HermesToolParser extends ScanningToolParser {
  static readonly keepsSpecialTokens = true;

  protected scan(text: string, final: boolean): ScanResult {
    let at = text.indexOf(START);
    if (at < 0) return beforeTag(text, START, final);
    const calls: ScannedCall[] = [];
    const result = (malformed: boolean): ScanResult => ({ content: text.slice(0, text.indexOf(START)), calls, malformed });
    while (at >= 0) {
      const bodyStart = at + START.length;
      const close = text.indexOf(END, bodyStart);
      const bodyEnd = close >= 0 ? close : text.length - (final ? 0 : partialTagOverlap(text, END));
      const body = text.slice(0, bodyEnd);
      const objectStart = skipWhitespace(body, bodyStart);
      if (objectStart >= body.length) {
        // An empty <tool_call></tool_call>, or one whose JSON has not started yet.
        if (close >= 0 || final) return result(true);
        calls.push({ name: null, arguments: '', argumentsComplete: false, streamable: true });
        return result(false);
      }
      if (body[objectStart] !== '{') return result(true);
      const object = scanCallObject(body, objectStart, ARGUMENT_KEYS);
      calls.push(object.call);
      if (object.malformed) return result(true);
      if (object.end < 0) return result(final || close >= 0);
      const trailing = skipWhitespace(body, object.end) < body.length;
      if (trailing && (close >= 0 || final)) return result(true);
      if (close < 0) return result(false);
      at = text.indexOf(START, close + END.length);
    }
    return result(false);
  }
}
