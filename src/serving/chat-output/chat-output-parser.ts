// One choice's output, split the way vLLM's serving does it: the reasoning parser takes the
// thinking out first, then the tool parser finds calls in what is left. The same object serves
// the non-streaming path (`parse`) or the streaming one (`parseDelta`), never both; chat
// completions and the Responses API drive it alike.

import type { ReasoningParser } from '../reasoning';
import type { ToolCall, ToolCallDelta, ToolParser } from '../tool-parsers';

export interface ParsedChatOutput {
  reasoning: string | null;
  content: string | null;
  toolCalls: ToolCall[];
  /** Where the reasoning section (tags included) ends in the text: 0 without one. */
  reasoningEnd: number;
}

/** A streamed delta's parsed fields (chat's `delta` keys). */
export interface ChatOutputDelta {
  reasoning?: string;
  content?: string;
  tool_calls?: ToolCallDelta[];
}

/** The answer follows the thinking, so the section ends where the content (a suffix) begins. */
function reasoningSectionEnd(text: string, reasoning: string | null, content: string | null): number {
  if (content === null) return reasoning === null ? 0 : text.length;
  return reasoning !== null && text.endsWith(content) ? text.length - content.length : 0;
}

export class ChatOutputParser {
  private calledTools = false;

  constructor(
    private readonly reasoning: ReasoningParser | null,
    private readonly tools: ToolParser | null,
  ) {}

  /** Whether a streamed delta has carried tool calls so far. */
  get toolsCalled(): boolean {
    return this.calledTools;
  }

  parse(text: string): ParsedChatOutput {
    let reasoning: string | null = null;
    let content: string | null = text;
    if (this.reasoning) ({ reasoning, content } = this.reasoning.extract(text));
    const reasoningEnd = reasoningSectionEnd(text, reasoning, content);
    if (!this.tools) return { reasoning, content, toolCalls: [], reasoningEnd };
    const extracted = this.tools.extract(content ?? '');
    return { reasoning, content: extracted.content || null, toolCalls: extracted.toolCalls, reasoningEnd };
  }

  /** The next piece of output text; `finished` on the last one. Null when there is nothing to send yet. */
  parseDelta(delta: string, finished: boolean): ChatOutputDelta | null {
    const out: ChatOutputDelta = {};
    let content: string | undefined = delta;
    if (this.reasoning) {
      const split = this.reasoning.extractDelta(delta, finished);
      if (split?.reasoning) out.reasoning = split.reasoning;
      content = split?.content;
    }
    if (this.tools) {
      const parsed = this.tools.extractDelta(content ?? '', finished);
      if (parsed?.content) out.content = parsed.content;
      if (parsed?.toolCalls?.length) {
        out.tool_calls = parsed.toolCalls;
        this.calledTools = true;
      }
    } else if (content) {
      out.content = content;
    }
    return out.reasoning !== undefined || out.content !== undefined || out.tool_calls !== undefined ? out : null;
  }
}
