// The contract of a reasoning parser: a model's raw text in, its thinking and its answer apart,
// all at once or as deltas while the text arrives. One parser object serves one choice.

export interface ReasoningSplit {
  reasoning: string | null;
  content: string | null;
}

export interface ReasoningDelta {
  reasoning?: string;
  content?: string;
}

export interface ReasoningParserContext {
  /** The request's chat_template_kwargs (with enable_thinking / reasoning_effort filled in). */
  chatTemplateKwargs: Record<string, unknown>;
}

export interface ReasoningParser {
  /**
   * True when the rendered prompt already closed the reasoning section (a template that writes
   * an empty think block when thinking is off): the output is then all content.
   */
  isReasoningEnd(promptText: string): boolean;
  /** Splits a complete output; never throws. */
  extract(text: string): ReasoningSplit;
  /** Takes the next piece of output; `finished` on the last call flushes held-back text. */
  extractDelta(delta: string, finished: boolean): ReasoningDelta | null;
  /**
   * The text that closes the reasoning section (`</think>`): structured outputs constrain only
   * what follows it. Without one they constrain from the first token.
   */
  readonly reasoningEndMarker?: string;
}

export interface ReasoningParserFactory {
  new (context: ReasoningParserContext): ReasoningParser;
  /** The format is written in special tokens (harmony): requests keep them in their text, with no spaces added. */
  readonly verbatimSpecialTokens?: boolean;
}
