// Derender of whole responses: output_mode "tokens" generate response(s) in, the OpenAI
// completion / chat response out. No engine involved: only the tokenizer, the original
// request's detokenization options and the logprob formatters. (Streams: derender-stream-serving.ts.)

import type { PositionLogprobs } from '../../engine/types';
import { chatFinishReason, messageFields } from '../chat-message';
import type { ChatChoice, ChatRequestBody, ChatResponse } from '../chat-serving';
import type { CompletionChoice, CompletionRequestBody, CompletionResponse } from '../completion-serving';
import { createdNow } from '../ids';
import { appendCompletionLogprobs, emptyCompletionLogprobs } from '../logprobs';
import { OpenAIHttpError } from '../openai-error';
import { resolveModelName } from '../serving-options';
import { buildUsage } from '../usage';
import { checkTokensMode, DerenderBase } from './derender-base';
import { impliedTopCount, positionsFromGenerateLogprobs } from './derender-logprobs';
import type { DerenderChatRequest, DerenderCompletionRequest, GenerateChoiceInput, GenerateResponseInput } from './derender-types';
import { detokenizeParams, ReplayDetokenizer } from './replay-detokenizer';

/** vLLM's VLLM_MAX_N_SEQUENCES default: the most responses / choices one call may carry. */
const MAX_N = 16384;

/** One choice's text and logprob positions. */
interface DecodedChoice {
  choice: GenerateChoiceInput;
  tokenIds: number[];
  text: string;
  positions: PositionLogprobs[] | null;
}

const badRequest = (message: string, param: string | null = null): OpenAIHttpError => OpenAIHttpError.badRequest(message, param);

export class DerenderServing extends DerenderBase {
  completion(body: DerenderCompletionRequest): CompletionResponse {
    const model = resolveModelName(body.model, this.opts);
    const responses = body.generate_responses;
    if (responses.length === 0) throw badRequest('generate_responses must not be empty', 'generate_responses');
    if (responses.length > MAX_N) throw badRequest(`generate_responses count (${responses.length}) exceeds server maximum (${MAX_N}).`, 'generate_responses');
    for (const [name, list] of [['prompt_tokens', body.prompt_tokens], ['prompt_token_ids', body.prompt_token_ids]] as const) {
      if (list != null && list.length !== responses.length) {
        throw badRequest(`${name} length (${list.length}) must equal generate_responses length (${responses.length})`, name);
      }
    }
    const request: CompletionRequestBody | null = body.completion_request ?? null;
    const namer = this.namer(request);
    const choices: CompletionChoice[] = [];
    let promptTokens = 0;
    let completionTokens = 0;
    responses.forEach((response, i) => {
      checkTokensMode(response, `generate_responses.${i}.output_mode`);
      const seed = body.prompt_token_ids?.[i] ?? response.prompt_token_ids ?? null;
      for (const decoded of this.decodeChoices(response, seed, request, `generate_responses.${i}`)) {
        let logprobs = null;
        if (decoded.positions) {
          logprobs = emptyCompletionLogprobs();
          const numTop = request?.logprobs ?? impliedTopCount(decoded.positions);
          appendCompletionLogprobs(logprobs, decoded.tokenIds, decoded.positions, numTop, namer, 0);
        }
        choices.push({
          index: choices.length,
          text: decoded.text,
          logprobs,
          finish_reason: decoded.choice.finish_reason ?? 'stop',
          stop_reason: null,
          token_ids: request?.return_token_ids ? decoded.tokenIds : null,
        });
        completionTokens += decoded.tokenIds.length;
      }
      promptTokens += body.prompt_tokens?.[i] ?? 0;
    });
    const kv = responses[0].kv_transfer_params ?? null;
    const sameKv = responses.every((r) => JSON.stringify(r.kv_transfer_params ?? null) === JSON.stringify(kv));
    return {
      id: responses[0].request_id,
      object: 'text_completion',
      created: createdNow(),
      model,
      choices,
      ...this.responseTail(promptTokens, completionTokens),
      kv_transfer_params: sameKv ? kv : null,
    };
  }

  chat(body: DerenderChatRequest): ChatResponse {
    const model = resolveModelName(body.model, this.opts);
    const response = body.generate_response;
    checkTokensMode(response, 'generate_response.output_mode');
    const request: ChatRequestBody | null = body.chat_request ?? null;
    const seed = body.prompt_token_ids ?? response.prompt_token_ids ?? null;
    const output = this.chatOutput(request, seed, false);
    let completionTokens = 0;
    const choices: ChatChoice[] = this.decodeChoices(response, seed, request, 'generate_response').map((decoded) => {
      completionTokens += decoded.tokenIds.length;
      const parser = output?.parser() ?? null;
      const parsed = parser ? parser.parse(decoded.text) : { reasoning: null, content: decoded.text, toolCalls: [], reasoningEnd: 0 };
      const fields = output ? messageFields(parsed, output.rules) : { content: decoded.text, tool_calls: [], reasoning: null };
      const hideTokens = parser !== null && output?.rules.includeReasoning === false;
      return {
        index: decoded.choice.index,
        message: { role: this.opts.responseRole, refusal: null, ...fields },
        logprobs: hideTokens ? null : this.chatLogprobs(decoded.positions, request),
        finish_reason: chatFinishReason(decoded.choice.finish_reason ?? null, output?.rules.choice ?? { kind: 'none' }, fields.tool_calls.length > 0, false),
        stop_reason: null,
        token_ids: request?.return_token_ids && !hideTokens ? decoded.tokenIds : null,
      };
    });
    const promptTokens = body.prompt_tokens ?? 0;
    return {
      id: response.request_id,
      object: 'chat.completion',
      created: createdNow(),
      model,
      choices,
      ...this.responseTail(promptTokens, completionTokens),
      prompt_logprobs: response.prompt_logprobs ?? null,
      prompt_token_ids: null,
      kv_transfer_params: response.kv_transfer_params ?? null,
    };
  }

  /** The fields after `choices` both response objects have, in their wire order. */
  private responseTail(promptTokens: number, completionTokens: number) {
    return { service_tier: null, system_fingerprint: null, usage: buildUsage(promptTokens, completionTokens, 0, this.opts) };
  }

  private decodeChoices(
    response: GenerateResponseInput,
    seed: readonly number[] | null,
    request: CompletionRequestBody | ChatRequestBody | null,
    param: string,
  ): DecodedChoice[] {
    if (response.choices.length === 0) throw badRequest('The generate response has no choices.', `${param}.choices`);
    if (response.choices.length > MAX_N) throw badRequest(`choices count (${response.choices.length}) exceeds server maximum (${MAX_N}).`, `${param}.choices`);
    const params = detokenizeParams(request);
    return [...response.choices]
      .sort((a, b) => a.index - b.index)
      .map((choice) => {
        const tokenIds = choice.token_ids ?? [];
        if (tokenIds.length === 0) throw badRequest(`Choice ${choice.index} has no token_ids.`, `${param}.choices`);
        if (tokenIds.length > this.engine.maxModelLen) {
          throw badRequest(`token_ids length (${tokenIds.length}) in choice ${choice.index} exceeds max_model_len (${this.engine.maxModelLen}).`, `${param}.choices`);
        }
        const replay = new ReplayDetokenizer({ tokenizer: this.tokenizer, params, promptTokenIds: seed, eosTokenIds: this.engine.eosTokenIds });
        replay.add(tokenIds, choice.finish_reason ?? null);
        return {
          choice,
          tokenIds,
          text: replay.text(true),
          positions: positionsFromGenerateLogprobs(choice.logprobs, tokenIds.length),
        };
      });
  }

}
