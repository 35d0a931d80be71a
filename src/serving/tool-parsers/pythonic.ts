// `pythonic`: Llama 3.2 / 4, ToolACE and others write the whole answer as a Python list of calls,
//   [get_weather(city='Paris', unit='celsius'), get_time(zone="CET")]
// optionally inside <|python_start|> ... <|python_end|>. Any other output is plain content.
// Arguments are converted to JSON, so a call is sent whole once its ')' has arrived.

import { partialTagOverlap, skipWhitespace } from './json-scan';
import { IncompleteInput, PythonCallReader, type PythonCall } from './python-literals';
import { ScanningToolParser, type ScanResult } from './scanning-tool-parser';

const START = '<|python_start|>';
const END = '<|python_end|>';

export class PythonicToolParser extends ScanningToolParser {
  static readonly keepsSpecialTokens = true;

  protected scan(text: string, final: boolean): ScanResult {
    let start = skipWhitespace(text, 0);
    if (text.startsWith(START, start)) start = skipWhitespace(text, start + START.length);
    const rest = text.slice(start);
    if (rest === '' || (!final && START.startsWith(rest))) return { content: final ? text : '', calls: [], malformed: false };
    if (rest[0] !== '[') return { content: text, calls: [], malformed: false };

    const found: PythonCall[] = [];
    const reader = new PythonCallReader(text, start);
    let malformed = false;
    try {
      reader.readCallList(found);
      const tail = text.slice(reader.position).trim();
      const endTag = tail.startsWith(END) ? tail.slice(END.length).trim() : tail;
      malformed = endTag !== '' && (final || partialTagOverlap(tail, END) !== tail.length);
    } catch (err) {
      malformed = !(err instanceof IncompleteInput) || final;
    }
    const calls = found.map((call) => ({
      name: call.name,
      arguments: call.args === null ? '' : JSON.stringify(call.args),
      argumentsComplete: call.args !== null,
      streamable: false,
    }));
    return { content: '', calls, malformed: malformed || (final && calls.length === 0) };
  }
}
