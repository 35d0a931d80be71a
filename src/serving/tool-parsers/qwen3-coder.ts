// `qwen3_coder`: Qwen3-Coder (and Qwen3.5) write XML-like calls,
//   <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>
// Parameter values are text; each is converted by the type its tool's schema gives it (strings
// stay strings), so a call is sent once its </function> has arrived. Content is the text before
// the first <tool_call>.

import { tryParseJson } from './json-scan';
import { beforeTag, ScanningToolParser, type ScanResult, type ScannedCall } from './scanning-tool-parser';
import type { FunctionTool } from './types';

const START = '<tool_call>';
const END = '</tool_call>';
const FUNCTION_TAG = '<function=';
const FUNCTION = /^\s*<function=([^>\n]+)>/;
const PARAMETER = /<parameter=([^>\n]+)>\n?([\s\S]*?)\n?<\/parameter>/g;

function schemaType(tool: FunctionTool | undefined, parameter: string): unknown {
  const properties = (tool?.parameters?.properties ?? null) as Record<string, { type?: unknown }> | null;
  return properties?.[parameter]?.type;
}

/** A parameter's text as the JSON value its schema type asks for; text it cannot convert stays a string. */
export function convertParameter(value: string, type: unknown): unknown {
  const types = (Array.isArray(type) ? type : [type]).map((t) => String(t).toLowerCase());
  if (value.toLowerCase() === 'null' && (types.includes('null') || type === undefined)) return null;
  if (type === undefined || types.includes('string')) return value;
  const trimmed = value.trim();
  if (types.includes('integer') && /^[+-]?\d+$/.test(trimmed)) return Number(trimmed);
  if (types.includes('number') && trimmed !== '' && Number.isFinite(Number(trimmed))) return Number(trimmed);
  if (types.includes('boolean') && /^(true|false)$/i.test(trimmed)) return trimmed.toLowerCase() === 'true';
  const parsed = tryParseJson(trimmed);
  return parsed.ok ? parsed.value : value;
}

export class Qwen3CoderToolParser extends ScanningToolParser {
  static readonly keepsSpecialTokens = true;

  protected scan(text: string, final: boolean): ScanResult {
    let at = text.indexOf(START);
    if (at < 0) return beforeTag(text, START, final);
    const content = text.slice(0, at);
    const calls: ScannedCall[] = [];
    while (at >= 0) {
      const bodyStart = at + START.length;
      const close = text.indexOf(END, bodyStart);
      const body = text.slice(bodyStart, close >= 0 ? close : text.length);
      const fn = FUNCTION.exec(body);
      if (!fn) {
        // The <function=...> line may still be arriving.
        const head = body.trimStart();
        const arriving = FUNCTION_TAG.startsWith(head) || (head.startsWith(FUNCTION_TAG) && !/[>\n]/.test(head));
        const open = close < 0 && !final && arriving;
        if (open) calls.push({ name: null, arguments: '', argumentsComplete: false, streamable: false });
        return { content, calls, malformed: !open };
      }
      const name = fn[1].trim();
      const functionEnd = body.indexOf('</function>', fn[0].length);
      const call: ScannedCall = { name, arguments: '', argumentsComplete: false, streamable: false };
      calls.push(call);
      if (functionEnd < 0) return { content, calls, malformed: final || close >= 0 };
      call.arguments = JSON.stringify(this.parameters(name, body.slice(fn[0].length, functionEnd)));
      call.argumentsComplete = true;
      if (close < 0) break;
      at = text.indexOf(START, close + END.length);
    }
    return { content, calls, malformed: false };
  }

  private parameters(functionName: string, body: string): Record<string, unknown> {
    const tool = this.context.tools.find((t) => t.name === functionName);
    const args: Record<string, unknown> = {};
    for (const [, key, value] of body.matchAll(PARAMETER)) args[key.trim()] = convertParameter(value, schemaType(tool, key.trim()));
    return args;
  }
}
