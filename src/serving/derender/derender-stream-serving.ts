// Streaming derender: one output_mode "tokens" generate chunk plus the client-carried state
// in, one OpenAI stream chunk plus the next state out (JSON, not SSE).

import { chatFinishReason, deltaFields } from '../chat-message';
import type { ChatChunk, ChatChunkChoice, ChatRequestBody } from '../chat-serving';
import type { CompletionChoice, CompletionChunk, CompletionRequestBody } from '../completion-serving';
import { createdNow } from '../ids';
import { appendCompletionLogprobs, emptyCompletionLogprobs } from '../logprobs';
import { OpenAIHttpError } from '../openai-error';
import { resolveModelName } from '../serving-options';
import { buildUsage, type UsageInfo } from '../usage';
import { checkTokensMode, DerenderBase } from './derender-base';
import { impliedTopCount, positionsFromGenerateLogprobs } from './derender-logprobs';
import type { DerenderChatStreamRequest, DerenderCompletionStreamRequest, GenerateChunkInput } from './derender-types';
import { detokenizeParams, ReplayDetokenizer } from './replay-detokenizer';
import { advanceStreamState, checkStreamState, type DerenderStreamState } from './stream-state';

export interface DerenderStreamResult<T> {
  chunk: T;
  stream_state: DerenderStreamState;
}

export class DerenderStreamServing extends DerenderBase {
  completionStream(body: DerenderCompletionStreamRequest): DerenderStreamResult<CompletionChunk> {
    const request: CompletionRequestBody | null = body.completion_request ?? null;
    const step = this.streamStep(body, request);
    const base = { ...step.base, object: 'text_completion' as const };
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

  chatStream(body: DerenderChatStreamRequest): DerenderStreamResult<ChatChunk> {
    const request: ChatRequestBody | null = body.chat_request ?? null;
    const output = this.chatOutput(request, body.prompt_token_ids ?? body.generate_chunk.prompt_token_ids ?? null, true);
    const step = this.streamStep(body, request);
    const base = { ...step.base, object: 'chat.completion.chunk' as const };
    if (!step.choice) return { chunk: { ...base, choices: [], usage: step.usage }, stream_state: step.state };
    const finished = step.choice.finish_reason != null;
    let delta: ChatChunkChoice['delta'] = { content: step.delta };
    const parser = output?.parser() ?? null;
    if (output && parser) {
      // The parser sees the text sent in earlier chunks again, then this chunk's: it ends where the stream left it.
      if (step.textOffset > 0) parser.parseDelta(step.text.slice(0, step.textOffset), false);
      delta = deltaFields(parser.parseDelta(step.delta, finished), output.rules) ?? {};
      if (delta.tool_calls) step.state.tools_streamed = true;
    }
    if (!step.state.role_sent) delta = { role: this.opts.responseRole, ...delta };
    step.state.role_sent = true;
    const hideTokens = parser !== null && output?.rules.includeReasoning === false;
    const choice: ChatChunkChoice = {
      index: step.choice.index,
      delta,
      logprobs: hideTokens ? null : this.chatLogprobs(step.positions, request),
      finish_reason: finished ? chatFinishReason(step.choice.finish_reason ?? null, output?.rules.choice ?? { kind: 'none' }, step.state.tools_streamed, true) : null,
    };
    if (request?.return_token_ids && !hideTokens) choice.token_ids = step.tokenIds;
    return { chunk: { ...base, choices: [choice], usage: step.usage }, stream_state: step.state };
  }

  /**
   * The shared part of a stream call: checks the chunk and state, replays the earlier output
   * tokens through a fresh detokenizer (no detokenizer internals cross the wire), adds the new
   * ones and returns the text delta and the next state.
   */
  private streamStep(
    body: DerenderCompletionStreamRequest | DerenderChatStreamRequest,
    request: CompletionRequestBody | ChatRequestBody | null,
  ) {
    const base = { id: body.generate_chunk.request_id, created: createdNow(), model: resolveModelName(body.model, this.opts) };
    const chunk: GenerateChunkInput = body.generate_chunk;
    checkTokensMode(chunk, 'generate_chunk.output_mode');
    if (chunk.choices.length > 1) throw OpenAIHttpError.badRequest('A generate stream chunk carries at most one choice.', 'generate_chunk.choices');
    const state = checkStreamState(body.stream_state ?? null);
    const usage = this.chunkUsage(chunk.usage ?? null, body.prompt_tokens ?? null);
    const choice = chunk.choices[0] ?? null;
    if (!choice) return { base, choice: null, state, usage, delta: '', text: '', tokenIds: [], positions: null, textOffset: state.logprob_text_offset };
    const tokenIds = choice.token_ids ?? [];
    const total = state.output_token_ids.length + tokenIds.length;
    if (total > this.engine.maxModelLen) {
      throw OpenAIHttpError.badRequest(`output token count (${total}) exceeds max_model_len (${this.engine.maxModelLen}).`, 'stream_state.output_token_ids');
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
    const next = advanceStreamState(state, tokenIds, delta.length);
    const positions = positionsFromGenerateLogprobs(choice.logprobs, tokenIds.length);
    return { base, choice, state: next, usage, delta, text, tokenIds, positions, textOffset };
  }

  private chunkUsage(usage: GenerateChunkInput['usage'], promptTokens: number | null): UsageInfo | null {
    if (!usage) return null;
    const prompt = promptTokens ?? usage.prompt_tokens;
    return buildUsage(prompt, usage.completion_tokens ?? 0, 0, this.opts);
  }
}
