// Derender: output_mode "tokens" generate responses (or one stream chunk + client-carried
// state) in, the OpenAI completion / chat response (or chunk) out. No engine involved: only
// the tokenizer, the request's detokenization options and the logprob formatters.

import { Inject, Injectable } from '@nestjs/common';
import { OpenAIHttpError } from '../../common/openai-error';
import type { ServerConfig } from '../../config/server-config';
import type { EngineClient, PositionLogprobs } from '../../engine/types';
import type { Tokenizer } from '../../model/types';
import type { ChatChunk, ChatChunkChoice, ChatChoice, ChatRequestBody, ChatResponse } from '../../serving/chat-serving';
import type { CompletionChoice, CompletionChunk, CompletionRequestBody, CompletionResponse } from '../../serving/completion-serving';
import { createdNow } from '../../serving/ids';
import { appendCompletionLogprobs, chatLogprobEntries, emptyCompletionLogprobs, tokenNamer, type TokenNamer } from '../../serving/logprobs';
import { resolveModelName } from '../../serving/serving-options';
import { buildUsage, type UsageInfo } from '../../serving/usage';
import { ENGINE_CLIENT, SERVER_CONFIG } from '../engine/engine.tokens';
import type { GenerateChoiceDto, GenerateResponseDto, GenerateStreamResponseDto } from '../tokens-generate/dto/generate-response.dto';
import type { GenerateLogProbs } from '../tokens-generate/tokens-logprobs';
import { impliedTopCount, positionsFromGenerateLogprobs } from './derender-logprobs';
import type {
  DerenderChatRequestDto,
  DerenderChatStreamRequestDto,
  DerenderCompletionRequestDto,
  DerenderCompletionStreamRequestDto,
  DerenderStreamStateDto,
} from './dto/derender-request.dto';
import { detokenizeParams, ReplayDetokenizer } from './replay-detokenizer';

/** vLLM's VLLM_MAX_N_SEQUENCES default: the most responses / choices one call may carry. */
const MAX_N = 16384;

export interface DerenderStreamState {
  prev_tokens: string[];
  prefix_offset: number;
  read_offset: number;
  role_sent: boolean;
  logprob_context_token_ids: number[];
  logprob_text_offset: number;
  output_token_ids: number[];
  output_chunk_lens: number[];
  tools_streamed: boolean;
  last_tool_call_ids: string[];
}

export interface DerenderStreamResult<T> {
  chunk: T;
  stream_state: DerenderStreamState;
}

/** One choice's text and logprob positions. */
interface DecodedChoice {
  choice: GenerateChoiceDto;
  tokenIds: number[];
  text: string;
  positions: PositionLogprobs[] | null;
}

const badRequest = (message: string, param: string | null = null): OpenAIHttpError => OpenAIHttpError.badRequest(message, param);

function checkTokensMode(response: { output_mode?: string | null }, param: string): void {
  // Responses without output_mode come from servers that predate it: tokens.
  if (response.output_mode != null && response.output_mode !== 'tokens') {
    throw badRequest(
      `Only output_mode "tokens" responses can be derendered; this one is output_mode "${response.output_mode}" and already detokenized.`,
      param,
    );
  }
}

@Injectable()
export class DerenderService {
  constructor(
    @Inject(ENGINE_CLIENT) private readonly engine: EngineClient,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  private get tokenizer(): Tokenizer {
    const tokenizer = this.engine.tokenizer;
    if (!tokenizer) throw OpenAIHttpError.notImplemented('Derender needs a tokenizer; this server runs without one.');
    return tokenizer;
  }

  private namer(request: { return_tokens_as_token_ids?: unknown } | null | undefined): TokenNamer {
    return tokenNamer(this.tokenizer, this.config.returnTokensAsTokenIds || request?.return_tokens_as_token_ids === true);
  }

  // ------------------------------------------------------------------ whole responses

  completion(body: DerenderCompletionRequestDto): CompletionResponse {
    const model = resolveModelName(body.model, this.config);
    const responses = body.generate_responses;
    if (responses.length === 0) throw badRequest('generate_responses must not be empty', 'generate_responses');
    if (responses.length > MAX_N) throw badRequest(`generate_responses count (${responses.length}) exceeds server maximum (${MAX_N}).`, 'generate_responses');
    for (const [name, list] of [['prompt_tokens', body.prompt_tokens], ['prompt_token_ids', body.prompt_token_ids]] as const) {
      if (list != null && list.length !== responses.length) {
        throw badRequest(`${name} length (${list.length}) must equal generate_responses length (${responses.length})`, name);
      }
    }
    const request = (body.completion_request ?? null) as CompletionRequestBody | null;
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
      service_tier: null,
      system_fingerprint: null,
      usage: buildUsage(promptTokens, completionTokens, 0, this.config),
      kv_transfer_params: sameKv ? kv : null,
    };
  }

  chat(body: DerenderChatRequestDto): ChatResponse {
    const model = resolveModelName(body.model, this.config);
    const response = body.generate_response;
    checkTokensMode(response, 'generate_response.output_mode');
    const request = (body.chat_request ?? null) as ChatRequestBody | null;
    const namer = this.namer(request);
    const seed = body.prompt_token_ids ?? response.prompt_token_ids ?? null;
    let completionTokens = 0;
    const choices: ChatChoice[] = this.decodeChoices(response, seed, request, 'generate_response').map((decoded) => {
      completionTokens += decoded.tokenIds.length;
      return {
        index: decoded.choice.index,
        message: { role: this.config.responseRole, content: decoded.text, refusal: null, tool_calls: [], reasoning: null },
        logprobs: this.chatLogprobs(decoded.positions, request, namer),
        finish_reason: decoded.choice.finish_reason ?? 'stop',
        stop_reason: null,
        token_ids: request?.return_token_ids ? decoded.tokenIds : null,
      };
    });
    const promptTokens = body.prompt_tokens ?? 0;
    return {
      id: response.request_id,
      object: 'chat.completion',
      created: createdNow(),
      model,
      choices,
      service_tier: null,
      system_fingerprint: null,
      usage: buildUsage(promptTokens, completionTokens, 0, this.config),
      prompt_logprobs: response.prompt_logprobs ?? null,
      prompt_token_ids: null,
      kv_transfer_params: response.kv_transfer_params ?? null,
    };
  }

  private decodeChoices(
    response: GenerateResponseDto,
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
          positions: positionsFromGenerateLogprobs(choice.logprobs as GenerateLogProbs | null, tokenIds.length),
        };
      });
  }

  private chatLogprobs(positions: PositionLogprobs[] | null, request: ChatRequestBody | null, namer: TokenNamer) {
    if (!positions || (request && !request.logprobs)) return null;
    const numTop = request?.top_logprobs ?? impliedTopCount(positions);
    return { content: chatLogprobEntries(positions, numTop, namer) };
  }

  // ------------------------------------------------------------------ one stream chunk

  completionStream(body: DerenderCompletionStreamRequestDto): DerenderStreamResult<CompletionChunk> {
    const model = resolveModelName(body.model, this.config);
    const request = (body.completion_request ?? null) as CompletionRequestBody | null;
    const step = this.streamStep(body, request);
    const base = { id: body.generate_chunk.request_id, object: 'text_completion' as const, created: createdNow(), model };
    if (!step.choice) return { chunk: { ...base, choices: [], usage: step.usage }, stream_state: step.state };
    let logprobs = null;
    if (step.positions) {
      logprobs = emptyCompletionLogprobs();
      const numTop = request?.logprobs ?? impliedTopCount(step.positions);
      appendCompletionLogprobs(logprobs, step.tokenIds, step.positions, numTop, this.namer(request), step.textOffset);
    }
    const choice: CompletionChoice = {
      index: step.choice.index,
      text: step.delta,
      logprobs,
      finish_reason: step.choice.finish_reason ?? null,
      stop_reason: null,
    };
    if (request?.return_token_ids) choice.token_ids = step.tokenIds;
    return { chunk: { ...base, choices: [choice], usage: step.usage }, stream_state: step.state };
  }

  chatStream(body: DerenderChatStreamRequestDto): DerenderStreamResult<ChatChunk> {
    const model = resolveModelName(body.model, this.config);
    const request = (body.chat_request ?? null) as ChatRequestBody | null;
    const step = this.streamStep(body, request);
    const base = { id: body.generate_chunk.request_id, object: 'chat.completion.chunk' as const, created: createdNow(), model };
    if (!step.choice) return { chunk: { ...base, choices: [], usage: step.usage }, stream_state: step.state };
    const delta: ChatChunkChoice['delta'] = { content: step.delta };
    if (!step.state.role_sent) delta.role = this.config.responseRole;
    step.state.role_sent = true;
    const choice: ChatChunkChoice = {
      index: step.choice.index,
      delta,
      logprobs: this.chatLogprobs(step.positions, request, this.namer(request)),
      finish_reason: step.choice.finish_reason ?? null,
    };
    if (request?.return_token_ids) choice.token_ids = step.tokenIds;
    return { chunk: { ...base, choices: [choice], usage: step.usage }, stream_state: step.state };
  }

  /**
   * The shared part of a stream call: checks the chunk and state, replays the earlier output
   * tokens through a fresh detokenizer (no detokenizer internals cross the wire), adds the new
   * ones and returns the text delta and the next state.
   */
  private streamStep(
    body: DerenderCompletionStreamRequestDto | DerenderChatStreamRequestDto,
    request: CompletionRequestBody | ChatRequestBody | null,
  ) {
    const chunk: GenerateStreamResponseDto = body.generate_chunk;
    checkTokensMode(chunk, 'generate_chunk.output_mode');
    if (chunk.choices.length > 1) throw badRequest('A generate stream chunk carries at most one choice.', 'generate_chunk.choices');
    const state = this.checkState(body.stream_state ?? null);
    const usage = this.chunkUsage(chunk.usage ?? null, body.prompt_tokens ?? null);
    const choice = chunk.choices[0] ?? null;
    if (!choice) return { choice: null, state, usage, delta: '', tokenIds: [], positions: null, textOffset: state.logprob_text_offset };
    const tokenIds = choice.token_ids ?? [];
    const total = state.output_token_ids.length + tokenIds.length;
    if (total > this.engine.maxModelLen) {
      throw badRequest(`output token count (${total}) exceeds max_model_len (${this.engine.maxModelLen}).`, 'stream_state.output_token_ids');
    }
    const seed = body.prompt_token_ids ?? chunk.prompt_token_ids ?? null;
    const replay = new ReplayDetokenizer({
      tokenizer: this.tokenizer,
      params: detokenizeParams(request),
      promptTokenIds: seed,
      eosTokenIds: this.engine.eosTokenIds,
    });
    if (state.output_token_ids.length > 0) replay.add(state.output_token_ids, null);
    replay.add(tokenIds, choice.finish_reason ?? null);
    const text = replay.text(choice.finish_reason != null);
    const textOffset = state.logprob_text_offset;
    const delta = text.length > textOffset ? text.slice(textOffset) : '';
    const next: DerenderStreamState = {
      ...state,
      logprob_context_token_ids: [...state.output_token_ids, ...tokenIds].slice(-4),
      logprob_text_offset: textOffset + delta.length,
      output_token_ids: [...state.output_token_ids, ...tokenIds],
      output_chunk_lens: tokenIds.length > 0 ? [...state.output_chunk_lens, tokenIds.length] : state.output_chunk_lens,
    };
    const positions = positionsFromGenerateLogprobs(choice.logprobs as GenerateLogProbs | null, tokenIds.length);
    return { choice, state: next, usage, delta, tokenIds, positions, textOffset };
  }

  private checkState(state: DerenderStreamStateDto | null): DerenderStreamState {
    const out: DerenderStreamState = {
      prev_tokens: state?.prev_tokens ?? [],
      prefix_offset: state?.prefix_offset ?? 0,
      read_offset: state?.read_offset ?? 0,
      role_sent: state?.role_sent ?? false,
      logprob_context_token_ids: state?.logprob_context_token_ids ?? [],
      logprob_text_offset: state?.logprob_text_offset ?? 0,
      output_token_ids: state?.output_token_ids ?? [],
      output_chunk_lens: state?.output_chunk_lens ?? [],
      tools_streamed: state?.tools_streamed ?? false,
      last_tool_call_ids: state?.last_tool_call_ids ?? [],
    };
    const fail = (message: string, field: string): never => {
      throw badRequest(`Inconsistent stream_state: ${message}`, `stream_state.${field}`);
    };
    if (out.prev_tokens.length > 1024) fail(`prev_tokens length (${out.prev_tokens.length}) exceeds maximum (1024)`, 'prev_tokens');
    if (out.logprob_context_token_ids.length > 4) fail('logprob_context_token_ids holds at most 4 ids', 'logprob_context_token_ids');
    for (const field of ['prefix_offset', 'read_offset', 'logprob_text_offset'] as const) {
      if (out[field] < 0) fail(`${field} must be >= 0`, field);
    }
    if (out.output_chunk_lens.some((n) => n <= 0)) fail('output_chunk_lens entries must be > 0', 'output_chunk_lens');
    const sum = out.output_chunk_lens.reduce((a, b) => a + b, 0);
    if (sum !== out.output_token_ids.length) {
      fail(`output_chunk_lens must sum to len(output_token_ids) (got sum=${sum}, len(output_token_ids)=${out.output_token_ids.length})`, 'output_chunk_lens');
    }
    return out;
  }

  private chunkUsage(usage: GenerateStreamResponseDto['usage'], promptTokens: number | null): UsageInfo | null {
    if (!usage) return null;
    const prompt = promptTokens ?? usage.prompt_tokens;
    return buildUsage(prompt, usage.completion_tokens ?? 0, 0, this.config);
  }
}
