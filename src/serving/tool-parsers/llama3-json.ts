// `llama3_json`: Llama 3.1 / 3.2 / 4 JSON tool calling. The output is one or more call objects,
// `{"name": "f", "parameters": {...}}` (or "arguments"), separated by ';', either as the whole
// output or after <|python_tag|> (text before the tag is content).

import { scanCallObject } from './call-object';
import { skipWhitespace } from './json-scan';
import { beforeTag, ScanningToolParser, type ScanResult, type ScannedCall } from './scanning-tool-parser';

const PYTHON_TAG = '<|python_tag|>';
const ARGUMENT_KEYS = ['arguments', 'parameters'];

export class Llama3JsonToolParser extends ScanningToolParser {
  static readonly keepsSpecialTokens = true;

  protected scan(text: string, final: boolean): ScanResult {
    const tagAt = text.indexOf(PYTHON_TAG);
    let content: string;
    let i: number;
    if (tagAt >= 0) {
      content = text.slice(0, tagAt);
      i = tagAt + PYTHON_TAG.length;
    } else {
      const lead = skipWhitespace(text, 0);
      // Only whitespace so far: a call may still follow.
      if (lead >= text.length) return { content: final ? text : '', calls: [], malformed: false };
      if (text[lead] !== '{') return beforeTag(text, PYTHON_TAG, final);
      content = '';
      i = lead;
    }
    const calls: ScannedCall[] = [];
    for (;;) {
      i = skipWhitespace(text, i);
      if (i >= text.length) break;
      if (text[i] !== '{') {
        // Text after the calls is dropped; text instead of any call is not a tool call.
        if (calls.length === 0) return { content, calls, malformed: true };
        break;
      }
      const object = scanCallObject(text, i, ARGUMENT_KEYS);
      calls.push(object.call);
      if (object.malformed) return { content, calls, malformed: true };
      if (object.end < 0) return { content, calls, malformed: final };
      i = skipWhitespace(text, object.end);
      if (text[i] !== ';') break;
      i++;
    }
    return { content, calls, malformed: final && calls.length === 0 };
  }
}
