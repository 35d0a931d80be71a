// The parts of a chat choice that depend on tool calling and reasoning: the message (or delta)
// fields and the finish reason, as vLLM's chat serving sets them.

import type { ChatOutputDelta, ParsedChatOutput } from './chat-output';
import type { ToolChoice } from './tool-choice';
import type { ToolCall } from './tool-parsers';

export interface ChatMessageFields {
  content: string | null;
  tool_calls: ToolCall[];
  reasoning: string | null;
}

export interface ChoiceOutputRules {
  choice: ToolChoice;
  /** parallel_tool_calls false keeps only the first call. */
  parallelToolCalls: boolean;
  includeReasoning: boolean;
}

/** The rules the request's fields set (parallel_tool_calls, include_reasoning). */
export function outputRulesOf(
  body: { parallel_tool_calls?: boolean | null; include_reasoning?: boolean | null },
  choice: ToolChoice,
): ChoiceOutputRules {
  return { choice, parallelToolCalls: body.parallel_tool_calls ?? true, includeReasoning: body.include_reasoning ?? true };
}

const forced = (choice: ToolChoice): boolean => choice.kind === 'required' || choice.kind === 'named';

/** The message fields of a complete choice; forced tool calls get '' content, as vLLM sends. */
export function messageFields(parsed: ParsedChatOutput, rules: ChoiceOutputRules): ChatMessageFields {
  const calls = rules.parallelToolCalls ? parsed.toolCalls : parsed.toolCalls.slice(0, 1);
  return {
    content: forced(rules.choice) ? (parsed.content ?? '') : parsed.content,
    tool_calls: rules.choice.kind === 'none' ? [] : calls,
    reasoning: rules.includeReasoning ? parsed.reasoning : null,
  };
}

/** A streamed delta with the request's rules applied; null when nothing is left. */
export function deltaFields(delta: ChatOutputDelta | null, rules: ChoiceOutputRules): ChatOutputDelta | null {
  if (!delta) return null;
  const out: ChatOutputDelta = { ...delta };
  if (!rules.includeReasoning) delete out.reasoning;
  if (out.tool_calls && !rules.parallelToolCalls) {
    out.tool_calls = out.tool_calls.filter((call) => call.index === 0);
    if (out.tool_calls.length === 0) delete out.tool_calls;
  }
  return Object.keys(out).length > 0 ? out : null;
}

/**
 * "tool_calls" when the model called tools: always for "auto" (non-streaming), when the engine
 * stopped normally for "required" and streamed "auto"; a named function keeps "stop", as in OpenAI's API.
 */
export function chatFinishReason(engineReason: string | null, choice: ToolChoice, calledTools: boolean, streaming: boolean): string {
  const reason = engineReason ?? 'stop';
  if (!calledTools || choice.kind === 'named' || choice.kind === 'none') return reason;
  if (choice.kind === 'auto' && !streaming) return 'tool_calls';
  return reason === 'stop' ? 'tool_calls' : reason;
}
