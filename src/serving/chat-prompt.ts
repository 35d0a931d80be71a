// Chat prompts: the chat template renders the conversation to text, which is then tokenized
// (add_special_tokens defaults to false: the template already writes BOS and friends).

import { RequestValidationError } from '../engine/errors';
import { ChatTemplateError, createChatTemplate } from '../model/chat-template';
import type { ChatMessage, ChatTemplate, Tokenizer } from '../model/types';
import { requireTokenizer, resolveTruncation, tokenizeText, truncateTokens, type PreparedPrompt } from './completion-prompts';

export interface ChatPromptOptions {
  addGenerationPrompt: boolean;
  continueFinalMessage: boolean;
  addSpecialTokens: boolean;
  documents: unknown[] | null;
  /** A per-request template (allowed only with --trust-request-chat-template). */
  chatTemplate: string | null;
  chatTemplateKwargs: Record<string, unknown> | null;
  /** The request's tool definitions for the template (null: none, or excluded). */
  tools?: unknown[] | null;
  /** --chat-template-content-format. */
  contentFormat?: 'auto' | 'string' | 'openai';
  trustRequestChatTemplate: boolean;
  truncatePromptTokens: number | null;
  truncationSide: 'left' | 'right' | null;
  maxModelLen: number;
}

/** What rendering the template reads (tokenizing and truncating read the rest). */
export type ChatRenderOptions = Pick<
  ChatPromptOptions,
  'addGenerationPrompt' | 'continueFinalMessage' | 'documents' | 'chatTemplate' | 'chatTemplateKwargs' | 'tools' | 'contentFormat'
>;

export interface ChatPromptFlags {
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
  chat_template?: string | null;
}

/** The checks vLLM makes on the template-related request fields before rendering. */
export function checkChatTemplateFlags(req: ChatPromptFlags, trustRequestChatTemplate: boolean): void {
  if (req.continue_final_message && (req.add_generation_prompt ?? true)) {
    throw new RequestValidationError(
      'Cannot set both `continue_final_message` and `add_generation_prompt` to True.',
      'continue_final_message',
    );
  }
  if (req.chat_template != null && !trustRequestChatTemplate) {
    throw new RequestValidationError(
      'Chat template is passed with request, but --trust-request-chat-template is not set. ' +
        'Refused request with untrusted chat template.',
      'chat_template',
    );
  }
}

/** The model's template, or (model without one) a trusted per-request template on its own. */
function templateFor(template: ChatTemplate | null, tokenizer: Tokenizer | null, opts: ChatRenderOptions): ChatTemplate | null {
  if (template || !opts.chatTemplate) return template;
  return createChatTemplate(opts.chatTemplate, { bos_token: tokenizer?.bosToken, eos_token: tokenizer?.eosToken });
}

export function renderChatText(
  modelTemplate: ChatTemplate | null,
  tokenizer: Tokenizer | null,
  messages: ChatMessage[],
  opts: ChatRenderOptions,
): string {
  let template: ChatTemplate | null;
  try {
    template = templateFor(modelTemplate, tokenizer, opts);
  } catch (err) {
    throw new RequestValidationError((err as Error).message, 'chat_template');
  }
  if (!template) {
    throw new RequestValidationError(
      'As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat ' +
        'template if the tokenizer does not define one.',
      'chat_template',
    );
  }
  try {
    return template.render(messages, {
      addGenerationPrompt: opts.addGenerationPrompt,
      continueFinalMessage: opts.continueFinalMessage,
      documents: opts.documents,
      extraKwargs: opts.chatTemplateKwargs,
      template: opts.chatTemplate,
      tools: opts.tools ?? null,
      contentFormat: opts.contentFormat,
    });
  } catch (err) {
    if (err instanceof RequestValidationError) throw err;
    const param = err instanceof ChatTemplateError && /invalid chat template/.test(err.message) ? 'chat_template' : 'messages';
    throw new RequestValidationError(`Failed to apply the chat template: ${(err as Error).message}`, param);
  }
}

export function prepareChatPrompt(
  template: ChatTemplate | null,
  tokenizer: Tokenizer | null,
  messages: ChatMessage[],
  opts: ChatPromptOptions,
): PreparedPrompt {
  requireTokenizer(tokenizer, 'messages');
  const text = renderChatText(template, tokenizer, messages, opts);
  const limit = resolveTruncation(opts.truncatePromptTokens, opts.maxModelLen);
  const fullIds = tokenizeText(tokenizer, text, opts.addSpecialTokens, 'messages');
  const tokenIds = truncateTokens(fullIds, limit, opts.truncationSide);
  if (tokenIds.length === 0) throw new RequestValidationError('The decoder prompt cannot be empty.', 'messages');
  return { text, tokenIds };
}
