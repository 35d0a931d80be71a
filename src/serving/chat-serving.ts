// /v1/chat/completions and /v1/chat/completions/batch: conversation(s) -> chat template ->
// engine request(s) -> OpenAI chat JSON or SSE chunks.

import { RequestValidationError } from '../engine/errors';
import type { EngineClient, EngineRequest, SamplingParams } from '../engine/types';
import type { ChatMessage } from '../model/types';
import { checkChatTemplateFlags, prepareChatPrompts } from './chat-prompt';
import { prepareChatMessages } from './chat-messages';
import type { PreparedPrompt } from './completion-prompts';
import { drainAll, generateFor, UsageCounter } from './engine-stream';
import { buildEngineRequests, ensureRoomFor } from './engine-requests';
import { createdNow, responseId } from './ids';
import { chatLogprobEntries, formatPromptLogprobs, tokenNamer, type ChatLogprobs } from './logprobs';
import { resolveMaxTokens } from './max-tokens';
import { buildSamplingParams } from './sampling-params';
import { sentFields, type SamplingRequestFields } from './sampling-request';
import { chatTemplateKwargs, checkRequestExtras, resolveModelName, type RequestExtras, type ServingOptions } from './serving-options';
import { rejectUnsupportedFields, UNSUPPORTED_CHAT_FIELDS } from './unsupported';
import { buildUsage, streamUsageFlags, sumUsage, type StreamOptions, type UsageInfo } from './usage';
import { turnTaker } from './yield-budget';

export interface ChatRequestBody extends SamplingRequestFields, RequestExtras {
  model?: string | null;
  messages?: unknown;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  stream_options?: StreamOptions | null;
  user?: string | null;
  echo?: boolean | null;
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
  add_special_tokens?: boolean | null;
  documents?: Array<Record<string, string>> | null;
  chat_template?: string | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  return_tokens_as_token_ids?: boolean | null;
  return_token_ids?: boolean | null;
  return_prompt_text?: boolean | null;
  [key: string]: unknown;
}

export interface PreparedChat {
  id: string;
  model: string;
  created: number;
  /** One per conversation (a single one outside batch). */
  conversations: ChatMessage[][];
  prompts: PreparedPrompt[];
  params: SamplingParams[];
  engineRequests: EngineRequest[];
  body: ChatRequestBody;
}

export interface ChatChoice {
  index: number;
  message: { role: string; content: string | null; refusal: null; tool_calls: []; reasoning: null };
  logprobs: ChatLogprobs | null;
  finish_reason: string;
  stop_reason: string | number | null;
  token_ids?: number[] | null;
}

export interface ChatResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  service_tier: null;
  system_fingerprint: null;
  usage: UsageInfo;
  prompt_logprobs: unknown;
  prompt_token_ids: number[] | null;
  prompt_text?: string | null;
  kv_transfer_params: Record<string, unknown> | null;
}

export interface ChatChunkChoice {
  index: number;
  delta: { role?: string; content?: string };
  logprobs: ChatLogprobs | null;
  finish_reason: string | null;
  stop_reason?: string | number | null;
  token_ids?: number[];
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChatChunkChoice[];
  usage?: UsageInfo | null;
  prompt_token_ids?: number[];
  prompt_text?: string;
}

export class ChatServing {
  constructor(
    private readonly engine: EngineClient,
    private readonly opts: ServingOptions,
  ) {}

  /** Validates the body and renders each conversation (ids from `idBase`, see requestIdBase); `batch` = messages is a list of conversations. */
  async prepare(body: ChatRequestBody, idBase: string, batch = false): Promise<PreparedChat> {
    const model = resolveModelName(body.model, this.opts);
    rejectUnsupportedFields(body, UNSUPPORTED_CHAT_FIELDS);
    checkRequestExtras(body, this.opts, true);
    checkChatTemplateFlags(body, this.opts.trustRequestChatTemplate);
    if (batch) {
      if (body.stream) throw new RequestValidationError('Streaming is not supported by the batch chat endpoint.', 'stream');
      if (body.use_beam_search) throw new RequestValidationError('Beam search is not supported by the batch chat endpoint.', 'use_beam_search');
    }
    if (body.stream_options != null && !body.stream) {
      throw new RequestValidationError('Stream options can only be defined when `stream=True`.', 'stream_options');
    }
    if (body.stream && body.prompt_logprobs != null) {
      throw new RequestValidationError('`prompt_logprobs` are not available when `stream=True`.', 'prompt_logprobs');
    }
    const logprobs = resolveChatLogprobs(body);
    const conversations = batch ? splitConversations(body.messages) : [prepareChatMessages(body.messages)];
    const engine = this.engine;
    ensureRoomFor(engine, conversations.length, body);
    const prompts = await prepareChatPrompts(engine.text, engine.chatTemplate !== null, conversations, {
      addGenerationPrompt: body.add_generation_prompt ?? true,
      continueFinalMessage: body.continue_final_message ?? false,
      addSpecialTokens: body.add_special_tokens ?? false,
      documents: body.documents ?? null,
      chatTemplate: body.chat_template ?? null,
      chatTemplateKwargs: chatTemplateKwargs(this.opts, body.chat_template_kwargs),
      trustRequestChatTemplate: this.opts.trustRequestChatTemplate,
      truncatePromptTokens: body.truncate_prompt_tokens ?? null,
      truncationSide: body.truncation_side ?? null,
      maxModelLen: engine.maxModelLen,
    });
    const sent = sentFields(body);
    const maxParam = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
    const params = prompts.map((prompt) =>
      buildSamplingParams(body, {
        sent,
        generationDefaults: engine.generationDefaults,
        maxTokens: resolveMaxTokens({
          requested: body.max_completion_tokens ?? body.max_tokens ?? null,
          param: maxParam,
          endpointDefault: null,
          generationConfigMax: engine.generationDefaults.max_new_tokens,
          promptLength: prompt.tokenIds.length,
          maxModelLen: engine.maxModelLen,
          promptParam: 'messages',
        }),
        logprobs,
        paramNames: { logprobs: 'top_logprobs', max_tokens: maxParam },
        vocabSize: engine.modelConfig.vocabSize,
        maxNumSeqs: engine.maxNumSeqs,
        maxLogprobs: this.opts.maxLogprobs,
        stream: !!body.stream,
        detokenize: engine.tokenizer !== null,
      }),
    );
    const id = responseId('chatcmpl', idBase);
    const engineRequests = buildEngineRequests(prompts, params, body, (i) => (batch ? `${id}_${i}` : id));
    return { id, model, created: createdNow(), conversations, prompts, params, engineRequests, body };
  }

  private namer(body: ChatRequestBody) {
    return tokenNamer(this.engine.tokenizer, this.opts.returnTokensAsTokenIds || !!body.return_tokens_as_token_ids);
  }

  /** With echo, the last message's content is prepended when its role is the response role (vLLM). */
  private echoPrefix(prep: PreparedChat, conversation: number): string {
    if (!prep.body.echo) return '';
    const messages = prep.conversations[conversation];
    const last = messages[messages.length - 1];
    if (!last || last.role !== this.opts.responseRole) return '';
    return typeof last.content === 'string' ? last.content : '';
  }

  async complete(prep: PreparedChat, signal?: AbortSignal): Promise<ChatResponse> {
    const results = await drainAll(this.engine, prep.engineRequests, prep.params.map((p) => p.output_kind), signal);
    const { body } = prep;
    const namer = this.namer(body);
    const n = prep.params[0].n;
    const numTop = body.top_logprobs ?? 0;
    const choices: ChatChoice[] = [];
    const usages: UsageInfo[] = [];
    const takeTurn = turnTaker();
    for (const [conversation, result] of results.entries()) {
      const promptIds = result.promptTokenIds.length > 0 ? result.promptTokenIds : prep.prompts[conversation].tokenIds;
      let completionTokens = 0;
      for (const choice of result.choices) {
        await takeTurn();
        completionTokens += choice.tokenIds.length;
        choices.push({
          index: conversation * n + choice.index,
          message: {
            role: this.opts.responseRole,
            content: this.echoPrefix(prep, conversation) + choice.text,
            refusal: null,
            tool_calls: [],
            reasoning: null,
          },
          logprobs: body.logprobs ? { content: chatLogprobEntries(choice.logprobs, numTop, namer) } : null,
          finish_reason: choice.finishReason ?? 'stop',
          stop_reason: choice.stopReason,
          token_ids: body.return_token_ids ? choice.tokenIds : null,
        });
      }
      usages.push(buildUsage(promptIds.length, completionTokens, result.numCachedTokens, this.opts));
    }
    const single = results.length === 1 ? results[0] : null;
    const response: ChatResponse = {
      id: prep.id,
      object: 'chat.completion',
      created: prep.created,
      model: prep.model,
      choices,
      service_tier: null,
      system_fingerprint: null,
      usage: sumUsage(usages, this.opts),
      prompt_logprobs: single && body.prompt_logprobs != null ? formatPromptLogprobs(single.promptLogprobs, namer) : null,
      prompt_token_ids: single && body.return_token_ids ? single.promptTokenIds : null,
      kv_transfer_params: body.kv_transfer_params ?? null,
    };
    if (body.return_prompt_text) response.prompt_text = prep.prompts.length === 1 ? prep.prompts[0].text : null;
    return response;
  }

  async *stream(prep: PreparedChat, signal?: AbortSignal): AsyncGenerator<ChatChunk> {
    const { body } = prep;
    const namer = this.namer(body);
    const n = prep.params[0].n;
    const numTop = body.top_logprobs ?? 0;
    const { includeUsage, continuousUsage } = streamUsageFlags(body.stream_options, this.opts.enableForceIncludeUsage);
    const base = { id: prep.id, object: 'chat.completion.chunk' as const, created: prep.created, model: prep.model };
    const counter = new UsageCounter(prep.prompts[0].tokenIds.length);
    const usageNow = (): UsageInfo => buildUsage(counter.promptTokens, counter.completionTokens, counter.cachedTokens, this.opts);
    const withUsage = (chunk: ChatChunk): ChatChunk => (continuousUsage ? { ...chunk, usage: usageNow() } : chunk);

    const outputs = generateFor(this.engine, prep.engineRequests[0], signal)[Symbol.asyncIterator]();
    // Wait for the engine's first answer so a request it refuses still gets a plain JSON error.
    let next = await outputs.next();
    for (let i = 0; i < n; i++) {
      const first: ChatChunk = { ...base, choices: [{ index: i, delta: { role: this.opts.responseRole, content: '' }, logprobs: null, finish_reason: null }] };
      if (i === 0 && body.return_token_ids) first.prompt_token_ids = prep.prompts[0].tokenIds;
      if (i === 0 && body.return_prompt_text && prep.prompts[0].text !== null) first.prompt_text = prep.prompts[0].text;
      yield withUsage(first);
    }
    const echo = this.echoPrefix(prep, 0);
    if (echo) {
      for (let i = 0; i < n; i++) yield withUsage({ ...base, choices: [{ index: i, delta: { content: echo }, logprobs: null, finish_reason: null }] });
    }
    try {
      while (!next.done) {
        const item = next.value;
        counter.add(item, prep.params[0].output_kind);
        for (const out of item.outputs) {
          if (!out.text && out.tokenIds.length === 0 && !out.finishReason) continue;
          const choice: ChatChunkChoice = {
            index: out.index,
            delta: { content: out.text },
            logprobs: body.logprobs ? { content: chatLogprobEntries(out.logprobs ?? [], numTop, namer) } : null,
            finish_reason: out.finishReason,
          };
          if (out.finishReason) choice.stop_reason = out.stopReason;
          if (body.return_token_ids) choice.token_ids = out.tokenIds;
          yield withUsage({ ...base, choices: [choice] });
        }
        next = await outputs.next();
      }
    } finally {
      if (!next.done) await outputs.return?.();
    }
    if (includeUsage) yield { ...base, choices: [], usage: usageNow() };
  }
}

/** Chat's logprobs (bool) + top_logprobs (int) -> the engine's sampled-token logprob count. */
function resolveChatLogprobs(body: Pick<ChatRequestBody, 'logprobs' | 'top_logprobs'>): number | null {
  const top = body.top_logprobs ?? null;
  if (top !== null && top !== -1 && top < 0) {
    throw new RequestValidationError('`top_logprobs` must be a positive value.', 'top_logprobs');
  }
  if (top !== null && top !== 0 && !body.logprobs) {
    throw new RequestValidationError('when using `top_logprobs`, `logprobs` must be set to true.', 'top_logprobs');
  }
  return body.logprobs ? (top ?? 0) : null;
}

function splitConversations(messages: unknown): ChatMessage[][] {
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every((m) => Array.isArray(m))) {
    throw new RequestValidationError('messages must be a non-empty list of conversations (lists of messages).', 'messages');
  }
  return messages.map((conversation) => prepareChatMessages(conversation));
}
