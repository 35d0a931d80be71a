// /v1/responses: items -> chat messages -> the chat template -> one engine request -> OpenAI's
// response object or its typed stream events; stored responses (retrieve, input_items, cancel,
// delete) and previous_response_id; background runs live in background-responses.ts. Function
// tools, tool_choice and reasoning go through chat's machinery (tool-choice.ts, the structured-
// outputs constraint, the ChatOutputParser). Every path runs the same event generator: the
// non-streaming answer is its last event's response.

import { startImageHashes } from '../media/image-hash';
import { RequestValidationError } from '../../engine/errors';
import { OUTPUT_KIND, type EngineClient, type MultiModalInput, type SamplingParams } from '../../engine/types';
import { deltaFields, outputRulesOf, type ChoiceOutputRules } from '../chat-message';
import { prepareChatMessagesTakingTurns } from '../chat-messages';
import type { ChatOutputParser, ChoiceParsing } from '../chat-output';
import { prepareChatPrompts } from '../chat-prompt';
import { requestTemplateKwargs } from '../chat-serving';
import type { PreparedPrompt } from '../completion-prompts';
import { buildEngineRequests } from '../engine-requests';
import { foldOutput, generateFor, type PromptResult } from '../engine-stream';
import { createdNow } from '../ids';
import { chatLogprobEntries } from '../logprobs';
import { OpenAIHttpError } from '../openai-error';
import { OpenAIServing } from '../openai-serving';
import { buildSamplingParams } from '../sampling-params';
import { sentFields, type SamplingRequestFields } from '../sampling-request';
import type { ServingOptions } from '../serving-options';
import { renameSourceField } from '../structured-outputs';
import { resolveRequestTools, RESPONSES_TOOLS, type RequestTools } from '../tool-choice';
import { BackgroundResponses } from './background-responses';
import {
  checkPreviousInputMessages, continuesFinalMessage, itemsToMessages, itemsToMessagesTakingTurns, normalizeInputTakingTurns, type ChatMessageDict,
} from './input-items';
import { OutputBuilder, type OutputDelta, type UnnumberedEvent } from './output-builder';
import { failedResponse, responseShell, storedRecord, TERMINAL_EVENTS, type PreparedResponse } from './prepared-response';
import { LIVE_STATUSES, type InputItem, type ResponseObject, type ResponseStatus, type ResponseStreamEvent, type ResponsesRequestBody, type StoredResponseData } from './protocol';
import { checkResponsesRequest, includesLogprobs, textFormatAsResponseFormat } from './request-checks';
import type { ResponsesStore } from './store';

export type { PreparedResponse } from './prepared-response';

/** How far previous_response_id chains may grow (--responses-chain-max-depth / -size). */
export interface ChainLimits {
  maxDepth: number;
  maxBytes: number;
}

export interface InputItemsQuery {
  limit?: number;
  order?: 'asc' | 'desc';
  after?: string;
  before?: string;
}

export interface InputItemList {
  object: 'list';
  data: InputItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

function notFound(id: string, param: string): OpenAIHttpError {
  return new OpenAIHttpError(404, `Response with id '${id}' not found.`, param);
}

/** One engine delta as output: split by the parser when there is one, else all text. Null when nothing is to show yet. */
function parsedDelta(parser: ChatOutputParser | null, rules: ChoiceOutputRules, text: string, finished: boolean): OutputDelta | null {
  if (!parser) return { content: text };
  return deltaFields(parser.parseDelta(text, finished), rules);
}

export class ResponsesServing extends OpenAIServing {
  private readonly background: BackgroundResponses;
  private warnedReasoningSummary = false;

  constructor(
    engine: EngineClient,
    opts: ServingOptions,
    private readonly store: ResponsesStore,
    private readonly chainLimits: ChainLimits,
  ) {
    super(engine, opts);
    this.background = new BackgroundResponses(store, (prep, signal, builder) => this.eventsOrFailure(prep, signal, 'queued', builder));
  }

  /** Listens for cancels and deletes from every replica (call once, before serving). */
  async start(): Promise<void> {
    await this.background.listen();
  }

  /** Validates, loads the previous response, renders the conversation; throws 400/404. `idBase`: see requestIdBase. */
  async prepare(body: ResponsesRequestBody, idBase: string): Promise<PreparedResponse> {
    const { name: model, lora } = await this.resolveModel(body.model);
    this.checkCommonFields(body, { unsupported: [], allowListXargs: true });
    checkResponsesRequest(body);
    if (body.reasoning?.summary != null && !this.warnedReasoningSummary) {
      this.warnedReasoningSummary = true;
      console.warn('[responses] reasoning.summary is ignored: reasoning is returned in full, never summarized.');
    }
    const store = body.store ?? true;
    // vLLM: a client's request_id is the response id as sent.
    const id = body.request_id ?? this.newResponseId('resp', idBase);
    if (store && (await this.store.status(id)) !== null) {
      throw new RequestValidationError(`A response with id '${id}' already exists.`, 'request_id');
    }
    const tools = resolveRequestTools(body, this.opts, RESPONSES_TOOLS);
    const inputItems = await normalizeInputTakingTurns(body.input);
    const { history, chainDepth } = await this.history(body);
    const conversation = [...history, ...(await itemsToMessagesTakingTurns(inputItems))];
    this.engine.ensureCapacity(1);
    // reasoning.effort reaches the template as chat's reasoning_effort does (enable_thinking too).
    const chatTemplateKwargs = requestTemplateKwargs(this.opts, { chat_template_kwargs: body.chat_template_kwargs, reasoning_effort: body.reasoning?.effort });
    const { prompt, multiModal } = await this.render(body, conversation, inputItems, tools, chatTemplateKwargs);
    const params = this.samplingParams(body, prompt, tools);
    const [engineRequest] = buildEngineRequests([prompt], [params], body, () => id, lora);
    if (multiModal) engineRequest.multiModal = multiModal;
    const parsing: ChoiceParsing = { choice: tools.choice, functions: tools.functions, chatTemplateKwargs, promptText: prompt.text };
    // Responses have no include_reasoning: the thinking is always an output item.
    const outputRules = outputRulesOf({ parallel_tool_calls: body.parallel_tool_calls }, tools.choice);
    this.constrainAfterReasoning(engineRequest, parsing, outputRules.includeReasoning);
    return {
      id, model, createdAt: createdNow(), body, inputItems, conversation, chainDepth, prompt, params, engineRequest, parsing, outputRules, store,
      maxOutputTokens: params.max_tokens ?? this.engine.maxModelLen - prompt.tokenIds.length,
      background: !!body.background, stream: !!body.stream,
    };
  }

  /**
   * The messages before this input (the previous response's conversation and output, or
   * previous_input_messages) and the chain's depth with this response. Each record holds its
   * whole conversation, so a turn reads one record, never the chain; the limits bound that read.
   */
  private async history(body: ResponsesRequestBody): Promise<{ history: ChatMessageDict[]; chainDepth: number }> {
    if (body.previous_input_messages != null) return { history: checkPreviousInputMessages(body.previous_input_messages), chainDepth: 1 };
    const previousId = body.previous_response_id;
    if (previousId == null) return { history: [], chainDepth: 1 };
    const previous = await this.store.get(previousId);
    if (!previous) throw notFound(previousId, 'previous_response_id');
    const data = previous.data as StoredResponseData;
    if (LIVE_STATUSES.includes(data.response.status)) {
      throw new RequestValidationError(`Previous response '${previousId}' is still ${data.response.status}.`, 'previous_response_id');
    }
    const chainDepth = (data.chainDepth ?? 1) + 1;
    const { maxDepth, maxBytes } = this.chainLimits;
    if (chainDepth > maxDepth) {
      throw new RequestValidationError(
        `The previous_response_id chain would link ${chainDepth} responses; at most ${maxDepth} are allowed (--responses-chain-max-depth). Start a new chain with the messages you need as input.`,
        'previous_response_id',
      );
    }
    if ((previous.bytes ?? 0) > maxBytes) {
      throw new RequestValidationError(
        `Previous response '${previousId}' holds a ${previous.bytes} byte conversation; at most ${maxBytes} bytes can be continued (--responses-chain-max-size). Start a new chain with the messages you need as input.`,
        'previous_response_id',
      );
    }
    // The previous turn's reasoning is not shown to the model again (vLLM).
    return { history: [...(data.conversation as ChatMessageDict[]), ...itemsToMessages(data.response.output, { skipReasoning: true })], chainDepth };
  }

  private async render(
    body: ResponsesRequestBody,
    conversation: ChatMessageDict[],
    inputItems: InputItem[],
    tools: RequestTools,
    chatTemplateKwargs: Record<string, unknown>,
  ): Promise<{ prompt: PreparedPrompt; multiModal: MultiModalInput | null }> {
    const messages = body.instructions ? [{ role: 'system', content: body.instructions }, ...conversation] : conversation;
    const continueFinal = continuesFinalMessage(inputItems);
    const maxModelLen = this.engine.maxModelLen;
    try {
      // The Responses API has no media_io_kwargs or mm_processor_kwargs: the server's apply.
      const media = this.multiModalItems({});
      const checked = await prepareChatMessagesTakingTurns(messages, 'input', media);
      const multiModal = (await media?.resolve()) ?? null;
      const imageHashes = startImageHashes([multiModal]);
      const [prompt] = await prepareChatPrompts(this.engine.text, this.engine.chatTemplate !== null, [checked], {
        addGenerationPrompt: !continueFinal,
        continueFinalMessage: continueFinal,
        addSpecialTokens: false,
        documents: null,
        chatTemplate: null,
        chatTemplateKwargs,
        tools: tools.templateTools,
        contentFormat: this.opts.chatTemplateContentFormat,
        imagePlaceholder: this.engine.vision?.prompt.placeholderText ?? null,
        trustRequestChatTemplate: false,
        // truncation 'auto' drops the oldest tokens so the prompt leaves room for the output.
        truncatePromptTokens: body.truncation === 'auto' ? Math.max(1, maxModelLen - (body.max_output_tokens ?? 1)) : null,
        truncationSide: 'left',
        maxModelLen,
      });
      await this.placeImages([prompt], [multiModal], imageHashes);
      return { prompt, multiModal };
    } catch (err) {
      if (err instanceof RequestValidationError && err.param === 'messages') throw new RequestValidationError(err.message, 'input');
      throw err;
    }
  }

  private samplingParams(body: ResponsesRequestBody, prompt: PreparedPrompt, tools: RequestTools): SamplingParams {
    const fields: SamplingRequestFields & { parallel_tool_calls?: boolean | null } = {
      temperature: body.temperature, top_p: body.top_p, top_k: body.top_k, repetition_penalty: body.repetition_penalty,
      seed: body.seed, stop: body.stop, ignore_eos: body.ignore_eos, logit_bias: body.logit_bias, vllm_xargs: body.vllm_xargs,
      skip_special_tokens: body.skip_special_tokens, include_stop_str_in_output: body.include_stop_str_in_output,
      // Structured outputs: text.format (as chat's response_format) or vLLM's structured_outputs, not both.
      response_format: textFormatAsResponseFormat(body),
      structured_outputs: body.structured_outputs,
      parallel_tool_calls: body.parallel_tool_calls,
    };
    const sent = sentFields(fields);
    try {
      const params = this.toolSamplingParams(fields, tools, (constrained) => this.buildSamplingParams(body, prompt, constrained, sent));
      // Errors the engine finds later (a schema xgrammar refuses) name the field the client sent.
      renameSourceField(params.structured_outputs, 'response_format', 'text.format');
      return params;
    } catch (err) {
      // The mapping names chat's field; here the client sent text.format.
      if (err instanceof RequestValidationError && err.param?.startsWith('response_format')) {
        throw new RequestValidationError(err.message.replace(/response_format(\.json_schema)?/g, 'text.format'), 'text.format');
      }
      throw err;
    }
  }

  private buildSamplingParams(body: ResponsesRequestBody, prompt: PreparedPrompt, fields: SamplingRequestFields, sent: Set<string>): SamplingParams {
    return buildSamplingParams(fields, {
      ...this.samplingContext(),
      sent,
      maxTokens: this.maxTokens({
        requested: body.max_output_tokens ?? null,
        param: 'max_output_tokens',
        endpointDefault: null,
        promptLength: prompt.tokenIds.length,
        promptParam: 'input',
      }),
      logprobs: includesLogprobs(body) ? (body.top_logprobs ?? 0) : null,
      paramNames: { max_tokens: 'max_output_tokens', logprobs: 'top_logprobs' },
      // Every path consumes deltas: the events are built from them.
      stream: true,
    });
  }

  /** With --reasoning-parser: how many output tokens the reasoning took (0 without a reasoning section). */
  private outputReasoningTokens(prep: PreparedResponse, text: string, tokenIds: readonly number[]): number {
    if (!this.parsers.reasoning) return 0;
    const parsed = this.outputParser(prep.parsing)?.parse(text);
    return parsed ? this.reasoningTokens(tokenIds, parsed.reasoningEnd, prep.params.skip_special_tokens) : 0;
  }

  private finalResponse(prep: PreparedResponse, builder: OutputBuilder, state: PromptResult, status: ResponseStatus): ResponseObject {
    const choice = state.choices[0];
    const outputTokens = choice?.tokenIds.length ?? 0;
    const promptTokens = state.promptTokenIds.length || prep.prompt.tokenIds.length;
    const usage = this.usage(promptTokens, outputTokens, state.numCachedTokens);
    const response: ResponseObject = {
      ...responseShell(prep, status),
      completed_at: status === 'completed' ? createdNow() : null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      output: builder.items,
      usage: {
        input_tokens: usage.prompt_tokens,
        input_tokens_details: { cached_tokens: state.numCachedTokens },
        output_tokens: usage.completion_tokens,
        output_tokens_details: { reasoning_tokens: choice ? this.outputReasoningTokens(prep, choice.text, choice.tokenIds) : 0 },
        total_tokens: usage.total_tokens,
      },
    };
    if (state.kvTransferParams) response.kv_transfer_params = state.kvTransferParams;
    if (prep.body.enable_response_messages) {
      response.input_messages = [{ type: 'raw_message_tokens', message: prep.prompt.text ?? '', tokens: prep.prompt.tokenIds }];
      response.output_messages = choice ? [{ type: 'raw_message_tokens', message: choice.text, tokens: choice.tokenIds }] : [];
    }
    return response;
  }

  /**
   * The stream events of one run, numbered from 0: created, in_progress, the items' events, then
   * completed / incomplete. A run aborted by a cancel ends after its items close, with no terminal
   * event (the cancel already stored `cancelled`). Engine errors are thrown.
   */
  private async *events(
    prep: PreparedResponse,
    signal: AbortSignal | undefined,
    initialStatus: 'queued' | 'in_progress',
    builder = new OutputBuilder(),
  ): AsyncGenerator<ResponseStreamEvent> {
    let sequence = 0;
    const numbered = (event: UnnumberedEvent): ResponseStreamEvent => ({ ...event, sequence_number: sequence++ });
    const outputs = generateFor(this.engine, prep.engineRequest, signal)[Symbol.asyncIterator]();
    // Wait for the engine's first answer so a request it refuses still gets a plain JSON error.
    let next = await outputs.next();
    const shell = responseShell(prep, initialStatus);
    yield numbered({ type: 'response.created', response: shell });
    yield numbered({ type: 'response.in_progress', response: { ...shell, status: 'in_progress' } });
    const state: PromptResult = { promptTokenIds: prep.prompt.tokenIds, promptLogprobs: null, numCachedTokens: 0, choices: [] };
    const withLogprobs = includesLogprobs(prep.body);
    const namer = this.tokenNamer(false);
    // Reasoning first, then function calls (the same parser chat uses); null: all output is text.
    const parser = this.outputParser(prep.parsing);
    try {
      while (!next.done) {
        foldOutput(state, next.value, OUTPUT_KIND.DELTA);
        for (const out of next.value.outputs) {
          const logprobs = withLogprobs ? chatLogprobEntries(out.logprobs ?? [], prep.body.top_logprobs ?? 0, namer) : [];
          const delta = parsedDelta(parser, prep.outputRules, out.text, out.finishReason !== null);
          // Logprobs travel with the text their tokens made; tokens of reasoning or calls carry none.
          for (const event of builder.add(delta ?? {}, parser && !delta?.content ? [] : logprobs)) yield numbered(event);
        }
        next = await outputs.next();
      }
    } finally {
      if (!next.done) await outputs.return?.();
    }
    const finishReason = state.choices[0]?.finishReason;
    // An abort before the engine took the request leaves no finish reason at all.
    const stopped = finishReason === 'abort' || signal?.aborted === true;
    const status: ResponseStatus = stopped ? 'cancelled' : finishReason === 'length' ? 'incomplete' : 'completed';
    for (const event of builder.finish(status === 'completed' ? 'completed' : 'incomplete')) yield numbered(event);
    if (status === 'cancelled') return;
    const response = this.finalResponse(prep, builder, state, status);
    yield numbered({ type: status === 'completed' ? 'response.completed' : 'response.incomplete', response });
  }

  /** Like events(), but an error after the first event ends the stream with response.failed. */
  private async *eventsOrFailure(
    prep: PreparedResponse,
    signal: AbortSignal | undefined,
    initialStatus: 'queued' | 'in_progress',
    builder = new OutputBuilder(),
  ): AsyncGenerator<ResponseStreamEvent> {
    let last = -1;
    try {
      for await (const event of this.events(prep, signal, initialStatus, builder)) {
        last = event.sequence_number;
        yield event;
      }
    } catch (err) {
      if (last < 0 && initialStatus === 'in_progress') throw err;
      yield { type: 'response.failed', sequence_number: last + 1, response: failedResponse({ ...responseShell(prep, 'failed'), output: builder.items }, err) };
    }
  }

  /** Non-streaming, in the foreground: the final response (stored when `store`). */
  async complete(prep: PreparedResponse, signal?: AbortSignal): Promise<ResponseObject> {
    let final: ResponseObject | null = null;
    for await (const event of this.events(prep, signal, 'in_progress')) {
      if (TERMINAL_EVENTS.has(event.type)) final = event.response as ResponseObject;
    }
    if (!final) throw new OpenAIHttpError(500, 'The response ended without a result.');
    if (prep.store) await this.store.put(storedRecord(prep, final));
    return final;
  }

  /**
   * Streaming, in the foreground: the events; the final response is stored before its event goes
   * out. A store that fails then turns that event into response.failed (the output stays in it).
   */
  async *stream(prep: PreparedResponse, signal?: AbortSignal): AsyncGenerator<ResponseStreamEvent> {
    for await (const event of this.eventsOrFailure(prep, signal, 'in_progress')) {
      if (prep.store && TERMINAL_EVENTS.has(event.type)) {
        const response = event.response as ResponseObject;
        try {
          await this.store.put(storedRecord(prep, response));
        } catch (err) {
          console.error(`[responses] storing response ${prep.id} failed: ${(err as Error).message}`);
          yield { type: 'response.failed', sequence_number: event.sequence_number, response: failedResponse(response, err) };
          return;
        }
      }
      yield event;
    }
  }

  /** Stores the queued response and runs it in the background (see BackgroundResponses). */
  async startBackground(prep: PreparedResponse): Promise<ResponseObject> {
    return this.background.start(prep);
  }

  /** The events of a background run this server is running (or ran lately), after `startingAfter`. */
  follow(id: string, startingAfter: number | null, signal?: AbortSignal): AsyncIterable<ResponseStreamEvent> {
    return this.background.follow(id, startingAfter, signal);
  }

  async retrieve(id: string): Promise<ResponseObject> {
    const record = await this.store.get(id);
    if (!record) throw notFound(id, 'response_id');
    return (record.data as StoredResponseData).response;
  }

  /** Cancels a queued or running background response (400 for one that already finished). */
  async cancel(id: string): Promise<ResponseObject> {
    for (;;) {
      const record = await this.store.get(id);
      if (!record) throw notFound(id, 'response_id');
      const data = record.data as StoredResponseData;
      const status = data.response.status;
      if (!LIVE_STATUSES.includes(status)) {
        throw new RequestValidationError(`Cannot cancel a response that is ${status}: only queued or in-progress background responses can be cancelled.`, 'response_id');
      }
      const cancelled: ResponseObject = { ...data.response, status: 'cancelled' };
      const written = await this.store.put({ id, status: 'cancelled', data: { ...data, response: cancelled } }, { statusIn: [status] });
      if (!written) continue; // it moved on meanwhile (queued -> in_progress, or finished): look again
      await this.background.stop(id);
      return cancelled;
    }
  }

  async delete(id: string): Promise<{ id: string; object: 'response'; deleted: true }> {
    if (!(await this.store.delete(id))) throw notFound(id, 'response_id');
    await this.background.stop(id);
    return { id, object: 'response', deleted: true };
  }

  async inputItems(id: string, query: InputItemsQuery): Promise<InputItemList> {
    const record = await this.store.get(id);
    if (!record) throw notFound(id, 'response_id');
    const limit = query.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new RequestValidationError('limit must be an integer between 1 and 100.', 'limit');
    let items = [...(record.data as StoredResponseData).inputItems];
    if ((query.order ?? 'desc') === 'desc') items.reverse();
    const cursor = (itemId: string, param: string): number => {
      const index = items.findIndex((item) => item.id === itemId);
      if (index < 0) throw new RequestValidationError(`No input item with id '${itemId}' in response '${id}'.`, param);
      return index;
    };
    if (query.after != null) items = items.slice(cursor(query.after, 'after') + 1);
    if (query.before != null) items = items.slice(0, cursor(query.before, 'before'));
    const data = items.slice(0, limit);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
      has_more: items.length > limit,
    };
  }

  /** Server shutdown: background runs stop (their stored status stays what it was last saved as). */
  async close(): Promise<void> {
    this.background.abortAll();
    await this.store.close();
  }
}
