// The contract of a tool-call parser: a model's raw text in, OpenAI tool calls out, either
// all at once (non-streaming) or as deltas while the text arrives (streaming). One parser
// object serves one choice of one request, so streaming state lives on the instance.

/** A function tool of the request (the `function` object of a `tools` entry). */
export interface FunctionTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

/** One entry of `message.tool_calls`. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * One entry of a streamed `delta.tool_calls`: the first delta of a call carries `id`, `type`
 * and `function.name`; later ones carry `function.arguments` fragments to append.
 */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

export interface ExtractedToolCalls {
  toolCalls: ToolCall[];
  /** Text that is not a tool call; null when there is none. */
  content: string | null;
}

export interface ToolParserDelta {
  content?: string;
  toolCalls?: ToolCallDelta[];
}

export interface ToolParserContext {
  /** The request's function tools (parsers that convert argument types read their schemas). */
  tools: FunctionTool[];
}

export interface ToolParser {
  /** Parses a complete output. Malformed calls fall back to plain content; this never throws. */
  extract(text: string): ExtractedToolCalls;
  /**
   * Takes the next piece of output text; `finished` on the last call, which flushes text held
   * back because it could have been the start of a tag. Returns null when there is nothing to send yet.
   */
  extractDelta(delta: string, finished: boolean): ToolParserDelta | null;
}

/** What the registry holds: a class (or factory) making one parser per choice. */
export interface ToolParserFactory {
  new (context: ToolParserContext): ToolParser;
  /**
   * True when the format's markers may be special tokens that detokenizing would drop
   * (`<tool_call>`, `[TOOL_CALLS]`): the request then keeps special tokens in its text, as vLLM does.
   */
  readonly keepsSpecialTokens?: boolean;
  /** The format is written in special tokens (harmony): requests keep them in their text, with no spaces added. */
  readonly verbatimSpecialTokens?: boolean;
}
