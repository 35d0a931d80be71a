// /tokenize (completion and chat forms) and /detokenize, with vLLM's response shapes.

import { RequestValidationError } from '../engine/errors';
import { OpenAIServing } from './openai-serving';
import type { Tokenizer } from '../model/types';
import { checkChatTemplateFlags, renderChatText } from './chat-prompt';
import { prepareChatMessages } from './chat-messages';
import { checkTokenIdsInVocab } from './completion-prompts';
import { chatTemplateKwargs } from './serving-options';
import { checkTools } from './tool-choice';
import { rejectUnsupportedFields } from './unsupported';

export interface TokenizeRequestBody {
  model?: string | null;
  prompt?: unknown;
  messages?: unknown;
  add_special_tokens?: boolean | null;
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
  chat_template?: string | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  return_token_strs?: boolean | null;
  [key: string]: unknown;
}

export interface TokenizeResponse {
  count: number;
  max_model_len: number;
  tokens: number[];
  token_strs: string[] | null;
}

export interface DetokenizeRequestBody {
  model?: string | null;
  tokens?: unknown;
}

export class TokenizeServing extends OpenAIServing {
  private tokenizer(): Tokenizer {
    const tokenizer = this.engine.tokenizer;
    if (!tokenizer) throw new RequestValidationError('This server runs without a tokenizer (--skip-tokenizer-init).', null);
    return tokenizer;
  }

  tokenize(body: TokenizeRequestBody): TokenizeResponse {
    this.checkModel(body.model);
    const tokenizer = this.tokenizer();
    let tokens: number[];
    if (body.messages != null) {
      rejectUnsupportedFields(body, ['mm_processor_kwargs']);
      const tools = checkTools(body.tools).length > 0 ? (body.tools as unknown[]) : null;
      checkChatTemplateFlags(body, this.opts.trustRequestChatTemplate);
      const text = renderChatText(this.engine.chatTemplate, tokenizer, prepareChatMessages(body.messages), {
        addGenerationPrompt: body.add_generation_prompt ?? true,
        continueFinalMessage: body.continue_final_message ?? false,
        documents: null,
        chatTemplate: body.chat_template ?? null,
        chatTemplateKwargs: chatTemplateKwargs(this.opts, body.chat_template_kwargs),
        tools,
        contentFormat: this.opts.chatTemplateContentFormat,
      });
      tokens = tokenizer.encode(text, { addSpecialTokens: body.add_special_tokens ?? false });
    } else if (typeof body.prompt === 'string') {
      tokens = tokenizer.encode(body.prompt, { addSpecialTokens: body.add_special_tokens ?? true });
    } else {
      throw new RequestValidationError('Either `prompt` (a string) or `messages` must be given.', 'prompt');
    }
    return {
      count: tokens.length,
      max_model_len: this.engine.maxModelLen,
      tokens,
      token_strs: body.return_token_strs ? tokens.map((id) => tokenizer.idToToken(id) ?? '') : null,
    };
  }

  detokenize(body: DetokenizeRequestBody): { prompt: string } {
    this.checkModel(body.model);
    const tokenizer = this.tokenizer();
    const tokens = body.tokens;
    if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'number')) {
      throw new RequestValidationError('tokens must be a list of integers.', 'tokens');
    }
    checkTokenIdsInVocab(tokens, tokenizer.vocabSize, 'tokens');
    return { prompt: tokenizer.decode(tokens) };
  }
}
