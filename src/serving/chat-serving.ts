// /v1/chat/completions and /v1/chat/completions/batch: conversation(s) -> chat template ->
// engine request(s) -> OpenAI chat JSON or SSE chunks.

import { RequestValidationError } from '../engine/errors';
import type { EngineRequest, SamplingParams } from '../engine/types';
import type { ChatMessage } from '../model/types';
import { chatFinishReason, deltaFields, messageFields, outputRulesOf, type ChoiceOutputRules } from './chat-message';
import { contentText, prepareChatMessagesTakingTurns } from './chat-messages';
import { structuredOutputsAfter, type ChatOutputDelta, type ChatOutputParser, type ChoiceParsing } from './chat-output';
import { checkChatTemplateFlags, prepareChatPrompts, type ChatRenderOptions } from './chat-prompt';
import type { PreparedPrompt } from './completion-prompts';
import { ChunkTemplate, plainChatChoiceJson } from './chunk-template';
import { drainAll, foldOutput, generateFor, type PromptResult } from './engine-stream';
import { buildEngineRequests, ensureRoomFor } from './engine-requests';
import type { MediaPartSink, MultiModalItems } from './media/multimodal-items';
import { startImageHashes } from './media/image-hash';
import { createdNow } from './ids';
import { chatLogprobEntries, chatLogprobEntriesTakingTurns, formatPromptLogprobs, type ChatLogprobs } from './logprobs';
import { OpenAIServing } from './openai-serving';
import { buildSamplingParams } from './sampling-params';
import { sentFields, type SamplingRequestFields } from './sampling-request';
import { chatTemplateKwargs, type RequestExtras, type ServingOptions } from './serving-options';
import { resolveRequestTools, type RequestTools } from './tool-choice';
import type { ToolCall } from './tool-parsers';
import { UNSUPPORTED_COMMON_FIELDS } from './unsupported';
import { streamUsageFlags, sumUsage, type StreamOptions, type UsageInfo } from './usage';
import { takeTurn } from './yield-budget';

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
  tools?: unknown;
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  reasoning_effort?: string | null;
  include_reasoning?: boolean | null;
  media_io_kwargs?: unknown;
  mm_processor_kwargs?: unknown;
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
  tools: RequestTools;
  /** What the template was rendered with (tools, kwargs with reasoning_effort/enable_thinking filled in). */
  renderOptions: ChatRenderOptions;
  outputRules: ChoiceOutputRules;
}

export interface ChatChoice {
  index: number;
  message: { role: string; content: string | null; refusal: null; tool_calls: ToolCall[]; reasoning: string | null };
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
  delta: ChatOutputDelta & { role?: string };
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

export class ChatServing extends OpenAIServing {
  /** Validates the body and renders each conversation (ids from `idBase`, see requestIdBase); `batch` = messages is a list of conversations. */
  async prepare(body: ChatRequestBody, idBase: string, batch = false): Promise<PreparedChat> {
    const { name: model, lora } = await this.resolveModel(body.model);
    this.checkCommonFields(body, { unsupported: UNSUPPORTED_COMMON_FIELDS, allowListXargs: true });
    checkChatTemplateFlags(body, this.opts.trustRequestChatTemplate);
    if (batch) {
      if (body.stream) throw new RequestValidationError('Streaming is not supported by the batch chat endpoint.', 'stream');
      if (body.use_beam_search) throw new RequestValidationError('Beam search is not supported by the batch chat endpoint.', 'use_beam_search');
      if (body.tools != null) throw new RequestValidationError('Tool use is not supported by the batch chat endpoint.', 'tools');
    }
    if (body.stream_options != null && !body.stream) {
      throw new RequestValidationError('Stream options can only be defined when `stream=True`.', 'stream_options');
    }
    if (body.stream && body.prompt_logprobs != null) {
      throw new RequestValidationError('`prompt_logprobs` are not available when `stream=True`.', 'prompt_logprobs');
    }
    const logprobs = resolveChatLogprobs(body);
    const tools = resolveRequestTools(body, this.opts);
    const mediaItems: Array<MultiModalItems | undefined> = [];
    // One tracker per conversation: --limit-mm-per-prompt counts each prompt's items.
    const nextMediaItems = (): MultiModalItems | undefined => {
      const items = this.multiModalItems(body);
      mediaItems.push(items);
      return items;
    };
    const conversations = batch ? await splitConversations(body.messages, nextMediaItems) : [await prepareChatMessagesTakingTurns(body.messages, 'messages', nextMediaItems())];
    const multiModal = await Promise.all(mediaItems.map((items) => (items ? items.resolve() : Promise.resolve(null))));
    const imageHashes = startImageHashes(multiModal);
    const engine = this.engine;
    const renderOptions: ChatRenderOptions = {
      addGenerationPrompt: body.add_generation_prompt ?? true,
      continueFinalMessage: body.continue_final_message ?? false,
      documents: body.documents ?? null,
      chatTemplate: body.chat_template ?? null,
      chatTemplateKwargs: requestTemplateKwargs(this.opts, body),
      tools: tools.templateTools,
      contentFormat: this.opts.chatTemplateContentFormat,
      imagePlaceholder: this.engine.vision?.prompt.placeholderText ?? null,
    };
    ensureRoomFor(engine, conversations.length, body, 'messages');
    const prompts = await prepareChatPrompts(engine.text, engine.chatTemplate !== null, conversations, {
      ...renderOptions,
      addSpecialTokens: body.add_special_tokens ?? false,
      trustRequestChatTemplate: this.opts.trustRequestChatTemplate,
      truncatePromptTokens: body.truncate_prompt_tokens ?? null,
      truncationSide: body.truncation_side ?? null,
      maxModelLen: engine.maxModelLen,
    });
    await this.placeImages(prompts, multiModal, imageHashes);
    const sent = sentFields(body);
    const maxParam = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
    const params = prompts.map((prompt) =>
      this.toolSamplingParams(body, tools, (fields) => buildSamplingParams(fields, {
        ...this.samplingContext(),
        sent,
        maxTokens: this.maxTokens({
          requested: body.max_completion_tokens ?? body.max_tokens ?? null,
          param: maxParam,
          endpointDefault: null,
          promptLength: prompt.tokenIds.length,
          promptParam: 'messages',
        }),
        logprobs,
        paramNames: { logprobs: 'top_logprobs', max_tokens: maxParam },
        stream: !!body.stream,
      })),
    );
    const id = this.newResponseId('chatcmpl', idBase);
    const engineRequests = buildEngineRequests(prompts, params, body, (i) => (batch ? `${id}_${i}` : id), lora);
    engineRequests.forEach((request, i) => {
      if (multiModal[i]) request.multiModal = multiModal[i];
    });
    const outputRules = outputRulesOf(body, tools.choice);
    const prep: PreparedChat = { id, model, created: createdNow(), conversations, prompts, params, engineRequests, body, tools, renderOptions, outputRules };
    engineRequests.forEach((request, i) => this.constrainAfterReasoning(request, this.choiceParsing(prep, i), outputRules.includeReasoning));
    return prep;
  }

  private choiceParsing(prep: PreparedChat, conversation: number): ChoiceParsing {
    return {
      choice: prep.tools.choice,
      functions: prep.tools.functions,
      chatTemplateKwargs: prep.renderOptions.chatTemplateKwargs ?? {},
      promptText: prep.prompts[conversation].text,
    };
  }

  /**
   * What /render reports for a conversation (vLLM's reasoning_ended and reasoning_parser_kwargs):
   * whether structured outputs may start at the first token; null without a reasoning parser.
   */
  reasoningState(prep: PreparedChat, conversation = 0): { reasoning_ended: boolean | null; reasoning_parser_kwargs: Record<string, unknown> | null } {
    if (!this.parsers.reasoning) return { reasoning_ended: null, reasoning_parser_kwargs: null };
    const parsing = this.choiceParsing(prep, conversation);
    return {
      reasoning_ended: structuredOutputsAfter(this.parsers, parsing, prep.outputRules.includeReasoning) === null,
      reasoning_parser_kwargs: { chat_template_kwargs: parsing.chatTemplateKwargs },
    };
  }

  /** A fresh output parser for one choice of `conversation`; null when its text is plain content. */
  private choiceParser(prep: PreparedChat, conversation: number): ChatOutputParser | null {
    return this.outputParser(this.choiceParsing(prep, conversation));
  }

  /** With --reasoning-parser, usage says how many output tokens were thinking (vLLM's completion_tokens_details). */
  private withReasoningTokens(usage: UsageInfo, reasoningTokens: number): UsageInfo {
    return this.opts.parsers?.reasoning ? { ...usage, completion_tokens_details: { reasoning_tokens: reasoningTokens } } : usage;
  }

  /** With echo, the last message's content is prepended when its role is the response role (vLLM). */
  private echoPrefix(prep: PreparedChat, conversation: number): string {
    if (!prep.body.echo) return '';
    const messages = prep.conversations[conversation];
    const last = messages[messages.length - 1];
    if (!last || last.role !== this.opts.responseRole) return '';
    return contentText(last.content);
  }

  async complete(prep: PreparedChat, signal?: AbortSignal): Promise<ChatResponse> {
    const results = await drainAll(this.engine, prep.engineRequests, prep.params.map((p) => p.output_kind), signal);
    const { body } = prep;
    const namer = this.tokenNamer(body.return_tokens_as_token_ids);
    const n = prep.params[0].n;
    const numTop = body.top_logprobs ?? 0;
    const choices: ChatChoice[] = [];
    const usages: UsageInfo[] = [];
    for (const [conversation, result] of results.entries()) {
      const promptIds = result.promptTokenIds.length > 0 ? result.promptTokenIds : prep.prompts[conversation].tokenIds;
      let completionTokens = 0;
      let reasoningTokens = 0;
      for (const choice of result.choices) {
        await takeTurn();
        completionTokens += choice.tokenIds.length;
        const parser = this.choiceParser(prep, conversation);
        const parsed = parser ? parser.parse(choice.text) : { reasoning: null, content: choice.text, toolCalls: [], reasoningEnd: 0 };
        reasoningTokens += this.reasoningTokens(choice.tokenIds, parsed.reasoningEnd, prep.params[0].skip_special_tokens);
        const fields = messageFields(parsed, prep.outputRules);
        const echo = this.echoPrefix(prep, conversation);
        // Hidden reasoning must not leak through token-level fields either.
        const hideTokens = parser !== null && !prep.outputRules.includeReasoning;
        choices.push({
          index: conversation * n + choice.index,
          message: {
            role: this.opts.responseRole,
            content: echo ? echo + (fields.content ?? '') : fields.content,
            refusal: null,
            tool_calls: fields.tool_calls,
            reasoning: fields.reasoning,
          },
          logprobs: body.logprobs && !hideTokens ? { content: await chatLogprobEntriesTakingTurns(choice.logprobs, numTop, namer) } : null,
          finish_reason: chatFinishReason(choice.finishReason, prep.tools.choice, fields.tool_calls.length > 0, false),
          stop_reason: choice.stopReason,
          token_ids: body.return_token_ids && !hideTokens ? choice.tokenIds : null,
        });
      }
      usages.push(this.withReasoningTokens(this.usage(promptIds.length, completionTokens, result.numCachedTokens), reasoningTokens));
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
      kv_transfer_params: results.find((r) => r.kvTransferParams)?.kvTransferParams ?? null,
    };
    if (body.return_prompt_text) response.prompt_text = prep.prompts.length === 1 ? prep.prompts[0].text : null;
    return response;
  }

  async *stream(prep: PreparedChat, signal?: AbortSignal): AsyncGenerator<ChatChunk> {
    const { body } = prep;
    const namer = this.tokenNamer(body.return_tokens_as_token_ids);
    const n = prep.params[0].n;
    const numTop = body.top_logprobs ?? 0;
    const { includeUsage, continuousUsage } = streamUsageFlags(body.stream_options, this.opts.enableForceIncludeUsage);
    const base = { id: prep.id, object: 'chat.completion.chunk' as const, created: prep.created, model: prep.model };
    const template = new ChunkTemplate(prep.id, 'chat.completion.chunk' as const, prep.created, prep.model);
    const state: PromptResult = { promptTokenIds: prep.prompts[0].tokenIds, promptLogprobs: null, numCachedTokens: 0, choices: [] };
    const usageNow = (): UsageInfo =>
      this.usage(state.promptTokenIds.length, state.choices.reduce((a, c) => a + c.tokenIds.length, 0), state.numCachedTokens);
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
    const parsers = Array.from({ length: n }, () => this.choiceParser(prep, 0));
    const hideTokens = parsers[0] !== null && !prep.outputRules.includeReasoning;
    try {
      while (!next.done) {
        const item = next.value;
        // Text and ids are kept (usage, reasoning tokens); logprobs already went out with their chunk.
        foldOutput(state, item, prep.params[0].output_kind, false);
        for (const out of item.outputs) {
          if (!out.text && out.tokenIds.length === 0 && !out.finishReason) continue;
          const parser = parsers[out.index];
          const logprobs = body.logprobs && !hideTokens ? { content: chatLogprobEntries(out.logprobs ?? [], numTop, namer) } : null;
          let delta: ChatChunkChoice['delta'] | null = { content: out.text };
          if (parser) {
            delta = deltaFields(parser.parseDelta(out.text, out.finishReason !== null), prep.outputRules);
            // Nothing to show yet: only a finish, logprobs or token ids still make a chunk.
            if (!delta && !out.finishReason && !logprobs && !(body.return_token_ids && !hideTokens)) continue;
          }
          const choice: ChatChunkChoice = { index: out.index, delta: delta ?? {}, logprobs, finish_reason: null };
          if (out.finishReason) {
            choice.finish_reason = chatFinishReason(out.finishReason, prep.tools.choice, !!parser?.toolsCalled, true);
            choice.stop_reason = out.stopReason;
          }
          let choiceJson: string | undefined;
          if (body.return_token_ids && !hideTokens) choice.token_ids = out.tokenIds;
          else if (!parser) choiceJson = plainChatChoiceJson(choice, out.text);
          yield template.chunk(choice, choiceJson, continuousUsage ? usageNow() : undefined);
        }
        next = await outputs.next();
      }
    } finally {
      if (!next.done) await outputs.return?.();
    }
    if (includeUsage) {
      // The thinking's token count, from the whole text of each choice (not sent per chunk).
      const reasoningTokens = state.choices.reduce((sum, c) => {
        const parsed = this.choiceParser(prep, 0)?.parse(c.text);
        return sum + (parsed ? this.reasoningTokens(c.tokenIds, parsed.reasoningEnd, prep.params[0].skip_special_tokens) : 0);
      }, 0);
      yield { ...base, choices: [], usage: this.withReasoningTokens(usageNow(), reasoningTokens) };
    }
  }
}

/**
 * The template's kwargs: the server's defaults under the request's chat_template_kwargs, plus
 * `reasoning_effort`, which also switches `enable_thinking` unless the request set it (vLLM's
 * build_chat_params).
 */
export function requestTemplateKwargs(
  opts: Pick<ServingOptions, 'defaultChatTemplateKwargs'>,
  body: Pick<ChatRequestBody, 'chat_template_kwargs' | 'reasoning_effort'>,
): Record<string, unknown> {
  const kwargs: Record<string, unknown> = { ...(chatTemplateKwargs(opts, body.chat_template_kwargs) ?? {}) };
  if (body.reasoning_effort != null) {
    kwargs.reasoning_effort = body.reasoning_effort;
    if (!('enable_thinking' in (body.chat_template_kwargs ?? {}))) kwargs.enable_thinking = body.reasoning_effort !== 'none';
  }
  return kwargs;
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

async function splitConversations(messages: unknown, mediaItems: () => MediaPartSink | undefined): Promise<ChatMessage[][]> {
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every((m) => Array.isArray(m))) {
    throw new RequestValidationError('messages must be a non-empty list of conversations (lists of messages).', 'messages');
  }
  const conversations: ChatMessage[][] = [];
  for (const conversation of messages) conversations.push(await prepareChatMessagesTakingTurns(conversation, 'messages', mediaItems()));
  return conversations;
}
