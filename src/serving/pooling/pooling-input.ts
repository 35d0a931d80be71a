// The inputs of the pooling routes as token ids: `input` (a string, strings, token ids or lists
// of token ids) or the chat form (`messages` rendered with the chat template), truncated as
// truncate_prompt_tokens says and checked against max_model_len, as vLLM's pooling renderer does.
// Tokenizing and rendering go through the engine's TextProcessor (off the HTTP thread when large).

import { RequestValidationError } from '../../engine/errors';
import type { EngineClient } from '../../engine/types';
import { prepareChatMessages } from '../chat-messages';
import { ChatFormFields, checkChatTemplateFlags, renderChats } from '../chat-prompt';
import { checkTokenIdsInVocab, requireTokenizer, resolveTruncation, splitCompletionPrompt, truncateTokens } from '../completion-prompts';

export interface PoolingInputFields extends ChatFormFields {
  input?: unknown;
  truncate_prompt_tokens?: number | null;
  truncation_side?: 'left' | 'right' | null;
}

export interface PoolingPrompt {
  tokenIds: number[];
  /** Segment ids of a sentence pair (cross-encoders); null for a single text. */
  tokenTypeIds: number[] | null;
}

export interface PoolingInputLimits {
  trustRequestChatTemplate: boolean;
  /** Longest prompt accepted; null when longer ones are handled (chunked embeddings). */
  maxTokens: number | null;
  /** The error for a prompt over maxTokens (vLLM words it per route). */
  tooLong: (tokens: number, max: number) => string;
}

/** The request's prompts, from `input` or `messages` (exactly one of them). */
export async function preparePoolingPrompts(body: PoolingInputFields, engine: EngineClient, limits: PoolingInputLimits): Promise<PoolingPrompt[]> {
  if (body.input != null && body.messages != null) throw new RequestValidationError('Give either `input` or `messages`, not both.', 'messages');
  if (body.messages != null) return [finish(await chatPromptIds(body, engine, limits.trustRequestChatTemplate), null, 'messages', body, engine, limits)];
  if (body.input == null) throw new RequestValidationError('Either `input` or `messages` must be given.', 'input');
  const entries = splitCompletionPrompt(body.input, 'input');
  // More inputs than the server ever holds: refused before any is tokenized.
  engine.ensureCapacity(entries.length, 'input');
  const texts = entries.filter((entry): entry is string => typeof entry === 'string');
  const encoded = texts.length > 0 ? await encodeTexts(engine, texts, body.add_special_tokens ?? true, 'input') : [];
  let next = 0;
  return entries.map((entry) => {
    const ids = typeof entry === 'string' ? encoded[next++] : entry;
    if (typeof entry !== 'string') checkTokenIdsInVocab(ids, engine.modelConfig.vocabSize, 'input');
    return finish(ids, null, 'input', body, engine, limits);
  });
}

/** Texts tokenized as the model's pooler wants them (lower-cased first when sentence_bert_config says so). */
export function encodeTexts(engine: EngineClient, texts: string[], addSpecialTokens: boolean, param: string): Promise<number[][]> {
  const text = requireTokenizer(engine.text, param);
  return text.encode(engine.pooler?.lowerCaseInputs ? texts.map((t) => t.toLowerCase()) : texts, addSpecialTokens);
}

/** One text, as encodeTexts. */
export async function encodeText(engine: EngineClient, text: string, addSpecialTokens: boolean, param: string): Promise<number[]> {
  return (await encodeTexts(engine, [text], addSpecialTokens, param))[0];
}

/** Truncation, emptiness and length checks shared by every prompt form. */
export function finish(
  ids: number[],
  typeIds: number[] | null,
  param: string,
  body: Pick<PoolingInputFields, 'truncate_prompt_tokens' | 'truncation_side'>,
  engine: EngineClient,
  limits: PoolingInputLimits,
): PoolingPrompt {
  const limit = resolveTruncation(body.truncate_prompt_tokens ?? null, engine.maxModelLen);
  const tokenIds = truncateTokens(ids, limit, body.truncation_side ?? null);
  const tokenTypeIds = typeIds ? truncateTokens(typeIds, limit, body.truncation_side ?? null) : null;
  if (tokenIds.length === 0) throw new RequestValidationError('The prompt cannot be empty.', param);
  if (limits.maxTokens !== null && tokenIds.length > limits.maxTokens) {
    throw new RequestValidationError(limits.tooLong(tokenIds.length, limits.maxTokens), param);
  }
  return { tokenIds, tokenTypeIds };
}

/** vLLM's words for a prompt over max_model_len on the classify and score routes. */
export function contextTooLong(tokens: number, max: number): string {
  return `This model's maximum context length is ${max} tokens. However, your request has ${tokens} input tokens. Please reduce the length of the input messages.`;
}

async function chatPromptIds(body: PoolingInputFields, engine: EngineClient, trustRequestChatTemplate: boolean): Promise<number[]> {
  // Pooling requests default add_generation_prompt to false (vLLM's ChatRequestMixin for pooling).
  const flags = { ...body, add_generation_prompt: body.add_generation_prompt ?? false };
  checkChatTemplateFlags(flags, trustRequestChatTemplate);
  const [rendered] = await renderChats(
    engine.text,
    engine.chatTemplate !== null,
    [prepareChatMessages(body.messages)],
    {
      addGenerationPrompt: flags.add_generation_prompt,
      continueFinalMessage: body.continue_final_message ?? false,
      documents: null,
      chatTemplate: body.chat_template ?? null,
      chatTemplateKwargs: body.chat_template_kwargs ?? null,
    },
    null,
  );
  return encodeText(engine, rendered.text, body.add_special_tokens ?? false, 'messages');
}
