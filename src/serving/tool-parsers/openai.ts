// `openai`: tool calls of gpt-oss's harmony output, as vLLM's parser of that name reads them:
// each message `to=functions.NAME` on the commentary channel is a call whose body is the
// arguments JSON; final answers and commentary preambles are the content; analysis is dropped
// (the `openai_gptoss` reasoning parser, when set, has taken it out first).

import { isAnswer, isToolCall, scanHarmony, type HarmonyMessagePart } from '../harmony/harmony-scan';
import { makeToolCallId } from './tool-call-id';
import type { ExtractedToolCalls, ToolCallDelta, ToolParser, ToolParserContext, ToolParserDelta } from './types';

const FUNCTIONS = 'functions.';

function isFunctionCall(part: HarmonyMessagePart): boolean {
  return isToolCall(part) && part.recipient!.startsWith(FUNCTIONS);
}

function readOutput(text: string, final: boolean): { content: string; calls: HarmonyMessagePart[] } {
  let content = '';
  const calls: HarmonyMessagePart[] = [];
  for (const part of scanHarmony(text, final)) {
    if (part.kind === 'text') content += part.text;
    else if (isAnswer(part)) content += part.body;
    else if (isFunctionCall(part)) calls.push(part);
  }
  return { content, calls };
}

export class OpenAIToolParser implements ToolParser {
  static readonly verbatimSpecialTokens = true;
  private text = '';
  private sentContent = 0;
  private readonly sent: { id: string; arguments: number }[] = [];

  constructor(protected readonly context: ToolParserContext) {}

  extract(text: string): ExtractedToolCalls {
    const { content, calls } = readOutput(text, true);
    return {
      toolCalls: calls.map((call) => ({
        id: makeToolCallId(),
        type: 'function' as const,
        function: { name: call.recipient!.slice(FUNCTIONS.length), arguments: call.body },
      })),
      content: content === '' ? null : content,
    };
  }

  extractDelta(delta: string, finished: boolean): ToolParserDelta | null {
    this.text += delta;
    const { content, calls } = readOutput(this.text, finished);
    const out: ToolParserDelta = {};
    if (content.length > this.sentContent) {
      out.content = content.slice(this.sentContent);
      this.sentContent = content.length;
    }
    const deltas: ToolCallDelta[] = [];
    calls.forEach((call, index) => {
      let sent = this.sent[index];
      if (!sent) {
        sent = { id: makeToolCallId(), arguments: call.body.length };
        this.sent.push(sent);
        deltas.push({ index, id: sent.id, type: 'function', function: { name: call.recipient!.slice(FUNCTIONS.length), arguments: call.body } });
      } else if (call.body.length > sent.arguments) {
        deltas.push({ index, function: { arguments: call.body.slice(sent.arguments) } });
        sent.arguments = call.body.length;
      }
    });
    if (deltas.length > 0) out.toolCalls = deltas;
    return out.content !== undefined || out.toolCalls ? out : null;
  }
}
