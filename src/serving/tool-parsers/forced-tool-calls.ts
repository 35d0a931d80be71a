// Output of the two tool_choice modes that constrain decoding (vLLM's structured-output tool
// calling): `required` makes the model write `[{"name": ..., "parameters": {...}}, ...]`, a named
// function makes it write that function's arguments object and nothing else.
//
// A `required` call counts once its object is closed: streamed, it goes out whole; cut off by
// max_tokens, the closed calls before it are the output and the open one is dropped, so both
// paths return the same calls and none with unfinished arguments.

import { scanCallArray } from './call-object';
import { skipWhitespace } from './json-scan';
import { ScanningToolParser, type ScanResult } from './scanning-tool-parser';
import type { ExtractedToolCalls, ToolParserContext } from './types';

/** tool_choice "required": a JSON array of {name, parameters}. */
export class RequiredToolCallsParser extends ScanningToolParser {
  protected scan(text: string): ScanResult {
    const start = skipWhitespace(text, 0);
    if (start >= text.length) return { content: '', calls: [], malformed: false };
    if (text[start] !== '[') return { content: '', calls: [], malformed: true };
    const list = scanCallArray(text, start, ['parameters']);
    if (list.malformed) return { content: '', calls: list.calls, malformed: true };
    return { content: '', calls: list.lastOpen ? list.calls.slice(0, -1) : list.calls, malformed: false };
  }

  /** A call list cut before its first call closed holds no call and no content. */
  extract(text: string): ExtractedToolCalls {
    const extracted = super.extract(text);
    if (extracted.toolCalls.length > 0 || this.scan(text).malformed) return extracted;
    return { toolCalls: [], content: null };
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
