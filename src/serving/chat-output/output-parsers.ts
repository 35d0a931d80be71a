// Which parsers a request's output goes through: the server's reasoning parser (unless the
// prompt already closed the reasoning section), and for tool calls the --tool-call-parser
// ("auto"), the array reader ("required") or the named-function reader — or none.

import { REASONING_PARSERS, type ReasoningParser, type ReasoningParserFactory } from '../reasoning';
import type { ToolChoice } from '../tool-choice';
import { NamedToolCallParser, RequiredToolCallsParser, TOOL_PARSERS, type FunctionTool, type ToolParser, type ToolParserFactory } from '../tool-parsers';
import { ChatOutputParser } from './chat-output-parser';

/** The parser classes the server flags name. */
export interface OutputParserFactories {
  tool: ToolParserFactory | null;
  reasoning: ReasoningParserFactory | null;
}

export const NO_PARSERS: OutputParserFactories = { tool: null, reasoning: null };

/** Looks the flag names up in the registries (after plugins have registered theirs). */
export function outputParserFactories(names: { toolCallParser: string | null; reasoningParser: string | null }): OutputParserFactories {
  return {
    tool: names.toolCallParser === null ? null : TOOL_PARSERS.get(names.toolCallParser),
    reasoning: names.reasoningParser === null ? null : REASONING_PARSERS.get(names.reasoningParser),
  };
}

export interface ChoiceParsing {
  choice: ToolChoice;
  functions: FunctionTool[];
  /** The template kwargs the prompt was rendered with (enable_thinking, reasoning_effort, ...). */
  chatTemplateKwargs: Record<string, unknown>;
  /** The rendered prompt; null when unknown. */
  promptText: string | null;
}

function toolParserFor(factories: OutputParserFactories, parsing: ChoiceParsing): ToolParser | null {
  const context = { tools: parsing.functions };
  switch (parsing.choice.kind) {
    case 'none':
      return null;
    case 'auto':
      return factories.tool ? new factories.tool(context) : null;
    case 'required':
      return new RequiredToolCallsParser(context);
    case 'named':
      return new NamedToolCallParser(context, parsing.choice.name);
  }
}

/** The reasoning parser of a choice; null when there is none or the prompt already closed the thinking. */
function reasoningParserFor(factories: OutputParserFactories, parsing: ChoiceParsing): ReasoningParser | null {
  const reasoning = factories.reasoning ? new factories.reasoning({ chatTemplateKwargs: parsing.chatTemplateKwargs }) : null;
  if (reasoning && parsing.promptText !== null && reasoning.isReasoningEnd(parsing.promptText)) return null;
  return reasoning;
}

/** A fresh parser for one choice, or null when its text is plain content. */
export function createChatOutputParser(factories: OutputParserFactories, parsing: ChoiceParsing): ChatOutputParser | null {
  const reasoning = reasoningParserFor(factories, parsing);
  const tools = toolParserFor(factories, parsing);
  return reasoning || tools ? new ChatOutputParser(reasoning, tools) : null;
}

/**
 * Where structured outputs start, as in vLLM: after the reasoning section (its end marker) when
 * the model will think first; null to constrain from the first token (no reasoning parser, the
 * prompt closed the thinking, or include_reasoning false, which asks for no thinking).
 */
export function structuredOutputsAfter(factories: OutputParserFactories, parsing: ChoiceParsing, includeReasoning: boolean): string | null {
  if (!includeReasoning) return null;
  return reasoningParserFor(factories, parsing)?.reasoningEndMarker ?? null;
}
