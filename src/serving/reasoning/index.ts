export type { ReasoningDelta, ReasoningParser, ReasoningParserContext, ReasoningParserFactory, ReasoningSplit } from './types';
export { DeepSeekR1ReasoningParser, Qwen3ReasoningParser, ThinkTagReasoningParser } from './think-tag-parser';
export { REASONING_PARSERS } from './registry';
