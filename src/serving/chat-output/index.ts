export { ChatOutputParser, type ChatOutputDelta, type ParsedChatOutput } from './chat-output-parser';
export { createChatOutputParser, outputParserFactories, structuredOutputsAfter, type ChoiceParsing, type OutputParserFactories } from './output-parsers';
export { countReasoningTokens } from './reasoning-tokens';
