// What both derender services share: the tokenizer (derender needs one), token naming for
// logprobs, the output_mode check and chat logprobs.

import { Inject } from '@nestjs/common';
import { OpenAIHttpError } from '../../serving/openai-error';
import type { ServerConfig } from '../../config/server-config';
import type { EngineClient, PositionLogprobs } from '../../engine/types';
import type { Tokenizer } from '../../model/types';
import type { ChatRequestBody } from '../../serving/chat-serving';
import { chatLogprobEntries, tokenNamer, type ChatLogprobs, type TokenNamer } from '../../serving/logprobs';
import { ENGINE_CLIENT, SERVER_CONFIG } from '../engine/engine.tokens';
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

export abstract class DerenderBase {
  constructor(
    @Inject(ENGINE_CLIENT) protected readonly engine: EngineClient,
    @Inject(SERVER_CONFIG) protected readonly config: ServerConfig,
  ) {}

  protected get tokenizer(): Tokenizer {
    const tokenizer = this.engine.tokenizer;
    if (!tokenizer) throw OpenAIHttpError.notImplemented('Derender needs a tokenizer; this server runs without one.');
    return tokenizer;
  }

  protected namer(request: { return_tokens_as_token_ids?: unknown } | null | undefined): TokenNamer {
    return tokenNamer(this.tokenizer, this.config.returnTokensAsTokenIds || request?.return_tokens_as_token_ids === true);
  }

  /** Chat logprobs when the original request asked for them (or, without it, whenever present). */
  protected chatLogprobs(positions: PositionLogprobs[] | null, request: ChatRequestBody | null): ChatLogprobs | null {
    if (!positions || (request && !request.logprobs)) return null;
    const numTop = request?.top_logprobs ?? impliedTopCount(positions);
    return { content: chatLogprobEntries(positions, numTop, this.namer(request)) };
  }
}
