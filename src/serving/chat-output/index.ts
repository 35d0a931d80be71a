export { ChatOutputParser, type ChatOutputDelta, type ParsedChatOutput } from './chat-output-parser';
export { createChatOutputParser, NO_PARSERS, outputParserFactories, structuredOutputsAfter, type ChoiceParsing, type OutputParserFactories } from './output-parsers';
export { countReasoningTokens } from './reasoning-tokens';
