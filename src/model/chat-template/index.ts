export { createChatTemplate } from './chat-template';
export { ChatTemplateError } from './errors';
export { BUILTIN_CHAT_TEMPLATE, resolveChatTemplateSource, chatTemplateFromTokenizerConfig } from './template-source';
export { detectContentFormat } from './messages';
