// /tokenize (completion and chat forms) and /detokenize, with vLLM's response shapes.

import { RequestValidationError } from '../engine/errors';
import type { TextProcessor } from '../engine/types';
import { OpenAIServing } from './openai-serving';
import type { Tokenizer } from '../model/types';
import { ChatFormFields, checkChatTemplateFlags, renderChats } from './chat-prompt';
import { prepareChatMessages } from './chat-messages';
import { checkTokenIdsInVocab } from './completion-prompts';
import { chatTemplateKwargs } from './serving-options';
import { checkTools } from './tool-choice';
import { rejectUnsupportedFields } from './unsupported';

export interface TokenizeRequestBody extends ChatFormFields {
  model?: string | null;
  prompt?: unknown;
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
  /** The tokenizer, and the TextProcessor that runs large jobs off the HTTP thread. */
  private tokenizer(): { tokenizer: Tokenizer; text: TextProcessor } {
    const { tokenizer, text } = this.engine;
    if (!tokenizer || !text) throw new RequestValidationError('This server runs without a tokenizer (--skip-tokenizer-init).', null);
    return { tokenizer, text };
  }

  async tokenize(body: TokenizeRequestBody): Promise<TokenizeResponse> {
    this.checkModel(body.model);
    const { tokenizer, text } = this.tokenizer();
    let tokens: number[];
    if (body.messages != null) {
      rejectUnsupportedFields(body, ['mm_processor_kwargs']);
      const tools = checkTools(body.tools).length > 0 ? (body.tools as unknown[]) : null;
      checkChatTemplateFlags(body, this.opts.trustRequestChatTemplate);
      const [rendered] = await renderChats(
        text,
        this.engine.chatTemplate !== null,
        [prepareChatMessages(body.messages)],
        {
          addGenerationPrompt: body.add_generation_prompt ?? true,
          continueFinalMessage: body.continue_final_message ?? false,
          documents: null,
          chatTemplate: body.chat_template ?? null,
          chatTemplateKwargs: chatTemplateKwargs(this.opts, body.chat_template_kwargs),
          tools,
          contentFormat: this.opts.chatTemplateContentFormat,
        },
        { addSpecialTokens: body.add_special_tokens ?? false },
      );
      tokens = rendered.tokenIds ?? [];
    } else if (typeof body.prompt === 'string') {
      [tokens] = await text.encode([body.prompt], body.add_special_tokens ?? true);
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

  async detokenize(body: DetokenizeRequestBody): Promise<{ prompt: string }> {
    this.checkModel(body.model);
    const { tokenizer, text } = this.tokenizer();
    const tokens = body.tokens;
    if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'number')) {
      throw new RequestValidationError('tokens must be a list of integers.', 'tokens');
    }
    checkTokenIdsInVocab(tokens, tokenizer.vocabSize, 'tokens');
    return { prompt: await text.decode(tokens) };
  }
}
