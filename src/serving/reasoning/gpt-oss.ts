// `openai_gptoss`: gpt-oss's harmony output. The analysis channel is the reasoning (messages
// joined by a newline, as vLLM joins them); final answers and commentary preambles are the content;
// a message to a tool is passed on in canonical harmony form, so the `openai` tool parser after this
// one can read it (without one, it stays in the content as the model wrote it).

import { HARMONY, isAnswer, isToolCall, scanHarmony, type HarmonyMessagePart } from '../harmony/harmony-scan';
import type { ReasoningDelta, ReasoningParser, ReasoningParserContext, ReasoningSplit } from './types';

const FINAL_HEADER = `${HARMONY.channel}final${HARMONY.message}`;

function toolCallText(part: HarmonyMessagePart): string {
  const header = `${HARMONY.start}assistant to=${part.recipient}${HARMONY.channel}${part.channel} ${HARMONY.constrain}json${HARMONY.message}`;
  return header + part.body + (part.ended ? HARMONY.call : '');
}

/** The reasoning and content of the text so far; both only grow as the text does. */
function splitHarmony(text: string, final: boolean): { reasoning: string; content: string; hasReasoning: boolean } {
  const reasoning: string[] = [];
  let content = '';
  for (const part of scanHarmony(text, final)) {
    if (part.kind === 'text') content += part.text;
    else if (part.headerDone && part.channel === 'analysis') reasoning.push(part.body);
    else if (isAnswer(part)) content += part.body;
    else if (isToolCall(part)) content += toolCallText(part);
  }
  return { reasoning: reasoning.join('\n'), content, hasReasoning: reasoning.length > 0 };
}

export class GptOssReasoningParser implements ReasoningParser {
  static readonly verbatimSpecialTokens = true;
  readonly reasoningEndMarker = FINAL_HEADER;
  private text = '';
  private sentReasoning = 0;
  private sentContent = 0;

  constructor(protected readonly context: ReasoningParserContext) {}

  isReasoningEnd(promptText: string): boolean {
    return promptText.endsWith(FINAL_HEADER);
  }

  extract(text: string): ReasoningSplit {
    const split = splitHarmony(text, true);
    return { reasoning: split.hasReasoning ? split.reasoning : null, content: split.content || null };
  }

  extractDelta(delta: string, finished: boolean): ReasoningDelta | null {
    this.text += delta;
    const split = splitHarmony(this.text, finished);
    const out: ReasoningDelta = {};
    if (split.reasoning.length > this.sentReasoning) {
      out.reasoning = split.reasoning.slice(this.sentReasoning);
      this.sentReasoning = split.reasoning.length;
    }
    if (split.content.length > this.sentContent) {
      out.content = split.content.slice(this.sentContent);
      this.sentContent = split.content.length;
    }
    return out.reasoning !== undefined || out.content !== undefined ? out : null;
  }
}
