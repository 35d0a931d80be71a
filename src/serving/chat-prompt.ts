// Chat prompts: the chat template renders the conversation to text, which is then tokenized
// (add_special_tokens defaults to false: the template already writes BOS and friends). Both run
// through the engine's TextProcessor, off the HTTP thread when the conversations are large.

import { RequestValidationError } from '../engine/errors';
import type { RenderedChat, TextProcessor } from '../engine/types';
import { ChatTemplateError } from '../model/chat-template';
import type { ChatMessage } from '../model/types';
import { requireTokenizer, resolveTruncation, truncateTokens, type PreparedPrompt } from './completion-prompts';
import { refusingLongPrompts } from './max-tokens';

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
  /** A vision model's placeholder text for image parts (ChatRenderOptions.imagePlaceholder). */
  imagePlaceholder?: string | null;
  trustRequestChatTemplate: boolean;
  truncatePromptTokens: number | null;
  truncationSide: 'left' | 'right' | null;
  maxModelLen: number;
}

/** What rendering the template reads (tokenizing and truncating read the rest). */
export type ChatRenderOptions = Pick<
  ChatPromptOptions,
  'addGenerationPrompt' | 'continueFinalMessage' | 'documents' | 'chatTemplate' | 'chatTemplateKwargs' | 'tools' | 'contentFormat' | 'imagePlaceholder'
>;

export interface ChatPromptFlags {
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
  chat_template?: string | null;
}

/** The chat form's request fields, shared by chat, /tokenize and the pooling routes. */
export interface ChatFormFields extends ChatPromptFlags {
  messages?: unknown;
  add_special_tokens?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
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

/** vLLM's answer when neither the model nor a trusted request brings a template. */
function noTemplateError(): RequestValidationError {
  return new RequestValidationError(
    'As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat ' +
      'template if the tokenizer does not define one.',
    'chat_template',
  );
}

/** A template failure as the client sees it: 400 on `chat_template` (it does not parse) or `messages`. */
function renderError(err: unknown): Error {
  if (err instanceof RequestValidationError) return err;
  if (!(err instanceof ChatTemplateError)) return err as Error;
  const param = /invalid chat template/.test(err.message) ? 'chat_template' : 'messages';
  return new RequestValidationError(`Failed to apply the chat template: ${err.message}`, param);
}

/**
 * Renders each conversation with the chat template (off the HTTP thread when large) and, with
 * `encode`, tokenizes it. `hasModelTemplate`: the engine's model brought a template.
 */
export async function renderChats(
  text: TextProcessor | null,
  hasModelTemplate: boolean,
  conversations: ChatMessage[][],
  opts: ChatRenderOptions,
  encode: { addSpecialTokens: boolean; tokenLimit?: number | null } | null,
  param = 'messages',
): Promise<RenderedChat[]> {
  const processor = requireTokenizer(text, param);
  if (!hasModelTemplate && !opts.chatTemplate) throw noTemplateError();
  try {
    return await processor.renderChat(
      conversations,
      {
        addGenerationPrompt: opts.addGenerationPrompt,
        continueFinalMessage: opts.continueFinalMessage,
        documents: opts.documents,
        extraKwargs: opts.chatTemplateKwargs,
        template: opts.chatTemplate,
        tools: opts.tools ?? null,
        contentFormat: opts.contentFormat,
        imagePlaceholder: opts.imagePlaceholder ?? null,
      },
      encode,
    );
  } catch (err) {
    throw renderError(err);
  }
}

/** The prompt of each conversation: rendered, tokenized, truncated as asked. */
export async function prepareChatPrompts(
  text: TextProcessor | null,
  hasModelTemplate: boolean,
  conversations: ChatMessage[][],
  opts: ChatPromptOptions,
): Promise<PreparedPrompt[]> {
  const limit = resolveTruncation(opts.truncatePromptTokens, opts.maxModelLen);
  // Without truncation a prompt of max_model_len tokens or more is refused, so tokenizing may stop early.
  const tokenLimit = limit === null ? opts.maxModelLen : null;
  const rendered = await refusingLongPrompts(
    renderChats(text, hasModelTemplate, conversations, opts, { addSpecialTokens: opts.addSpecialTokens, tokenLimit }),
    opts.maxModelLen,
    'messages',
  );
  return rendered.map((chat) => {
    const tokenIds = truncateTokens(chat.tokenIds ?? [], limit, opts.truncationSide);
    if (tokenIds.length === 0) throw new RequestValidationError('The decoder prompt cannot be empty.', 'messages');
    return { text: chat.text, tokenIds };
  });
}
