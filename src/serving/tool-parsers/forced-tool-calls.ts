// Output of the two tool_choice modes that constrain decoding (vLLM's structured-output tool
// calling): `required` makes the model write `[{"name": ..., "parameters": {...}}, ...]`, a named
// function makes it write that function's arguments object and nothing else.

import { scanCallArray } from './call-object';
import { skipWhitespace } from './json-scan';
import { ScanningToolParser, type ScanResult } from './scanning-tool-parser';
import type { ToolParserContext } from './types';

/** tool_choice "required": a JSON array of {name, parameters}. */
export class RequiredToolCallsParser extends ScanningToolParser {
  protected scan(text: string, final: boolean): ScanResult {
    const start = skipWhitespace(text, 0);
    if (start >= text.length) return { content: '', calls: [], malformed: final };
    if (text[start] !== '[') return { content: '', calls: [], malformed: true };
    const list = scanCallArray(text, start, ['parameters']);
    return { content: '', calls: list.calls, malformed: list.malformed || (final && list.end < 0) };
  }
}

/** A named tool_choice: the whole output is the named function's arguments. */
export class NamedToolCallParser extends ScanningToolParser {
  constructor(context: ToolParserContext, private readonly functionName: string) {
    super(context);
  }

  protected scan(text: string, final: boolean): ScanResult {
    // Like vLLM, the text is the arguments even when generation stopped early (finish_reason says so).
    const call = { name: this.functionName, arguments: text.trimStart(), argumentsComplete: final, streamable: true };
    return { content: '', calls: [call], malformed: false };
  }
}
