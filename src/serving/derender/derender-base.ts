// What both derender serving classes share: the tokenizer (derender needs one), token naming for
// logprobs, the output_mode check and chat logprobs.

import type { EngineClient, PositionLogprobs } from '../../engine/types';
import type { Tokenizer } from '../../model/types';
import { outputRulesOf, type ChoiceOutputRules } from '../chat-message';
import { createChatOutputParser, NO_PARSERS, type ChatOutputParser } from '../chat-output';
import { requestTemplateKwargs, type ChatRequestBody } from '../chat-serving';
import { chatLogprobEntries, tokenNamer, type ChatLogprobs, type TokenNamer } from '../logprobs';
import { OpenAIHttpError } from '../openai-error';
import type { ServingOptions } from '../serving-options';
import { resolveRequestTools } from '../tool-choice';
import { impliedTopCount } from './derender-logprobs';

export function checkTokensMode(response: { output_mode?: string | null }, param: string): void {
  // Responses without output_mode come from servers that predate it: tokens.
  if (response.output_mode != null && response.output_mode !== 'tokens') {
    throw OpenAIHttpError.badRequest(
      `Only output_mode "tokens" responses can be derendered; this one is output_mode "${response.output_mode}" and already detokenized.`,
      param,
    );
  }
}

/** How a derendered chat choice is parsed, when the server has a tool or reasoning parser. */
export interface DerenderChatOutput {
  /** A fresh parser for one choice (null: nothing to parse for this request). */
  parser(): ChatOutputParser | null;
  rules: ChoiceOutputRules;
}

export abstract class DerenderBase {
  constructor(
    protected readonly engine: EngineClient,
    protected readonly opts: ServingOptions,
  ) {}

  protected get tokenizer(): Tokenizer {
    const tokenizer = this.engine.tokenizer;
    if (!tokenizer) throw OpenAIHttpError.notImplemented('Derender needs a tokenizer; this server runs without one.');
    return tokenizer;
  }

  protected namer(request: { return_tokens_as_token_ids?: unknown } | null | undefined): TokenNamer {
    return tokenNamer(this.tokenizer, this.opts.returnTokensAsTokenIds || request?.return_tokens_as_token_ids === true);
  }

  /**
   * With --tool-call-parser / --reasoning-parser, the output is parsed as chat serving parses it,
   * which needs the original chat_request (and, for the thinking state, the prompt token ids).
   * Null when the server has no parser.
   */
  protected chatOutput(request: ChatRequestBody | null, promptTokenIds: readonly number[] | null, streaming: boolean): DerenderChatOutput | null {
    const factories = this.opts.parsers ?? NO_PARSERS;
    if (!factories.tool && !factories.reasoning) return null;
    if (!request) throw OpenAIHttpError.badRequest('chat_request is required to derender with a tool or reasoning parser.', 'chat_request');
    if (streaming && !promptTokenIds) {
      throw OpenAIHttpError.badRequest('prompt_token_ids are required to stream-derender with a tool or reasoning parser.', 'prompt_token_ids');
    }
    const tools = resolveRequestTools(request, this.opts);
    const parsing = {
      choice: tools.choice,
      functions: tools.functions,
      chatTemplateKwargs: requestTemplateKwargs(this.opts, request),
      promptText: promptTokenIds ? this.tokenizer.decode(promptTokenIds, { skipSpecialTokens: false }) : null,
    };
    return { parser: () => createChatOutputParser(factories, parsing), rules: outputRulesOf(request, tools.choice) };
  }

  /** Chat logprobs when the original request asked for them (or, without it, whenever present). */
  protected chatLogprobs(positions: PositionLogprobs[] | null, request: ChatRequestBody | null): ChatLogprobs | null {
    if (!positions || (request && !request.logprobs)) return null;
    const numTop = request?.top_logprobs ?? impliedTopCount(positions);
    return { content: chatLogprobEntries(positions, numTop, this.namer(request)) };
  }
}
