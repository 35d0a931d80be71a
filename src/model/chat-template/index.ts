export { createChatTemplate, type ChatTemplateVariants } from './chat-template';
export { ChatTemplateError } from './errors';
export {
  BUILTIN_CHAT_TEMPLATE, NO_CHAT_TEMPLATES, chatTemplatesFromConfigValue, resolveChatTemplateSource, type ChatTemplateSources,
} from './template-source';
export { detectContentFormat } from './messages';
export { createHarmonyChatTemplate, isHarmonyVocabulary } from './harmony';
