// /v1/responses: items -> chat messages -> the chat template -> one engine request -> OpenAI's
// response object or its typed stream events; stored responses (retrieve, input_items, cancel,
// delete), previous_response_id and background runs. Every path runs the same event generator:
// the non-streaming answer is its last event's response.

import { RequestValidationError } from '../../engine/errors';
import { OUTPUT_KIND, type EngineClient, type EngineRequest, type SamplingParams } from '../../engine/types';
import { prepareChatMessages } from '../chat-messages';
import { prepareChatPrompts } from '../chat-prompt';
import type { PreparedPrompt } from '../completion-prompts';
import { buildEngineRequests } from '../engine-requests';
import { foldOutput, generateFor, type PromptResult } from '../engine-stream';
import { createdNow } from '../ids';
import { chatLogprobEntries } from '../logprobs';
import { OpenAIHttpError } from '../openai-error';
import { OpenAIServing } from '../openai-serving';
import { buildSamplingParams } from '../sampling-params';
import { sentFields, type SamplingRequestFields } from '../sampling-request';
import { chatTemplateKwargs, type ServingOptions } from '../serving-options';
import { BackgroundRuns, type BackgroundRun } from './background-runs';
import { checkPreviousInputMessages, continuesFinalMessage, itemsToMessages, normalizeInput, type ChatMessageDict } from './input-items';
import { OutputBuilder, type UnnumberedEvent } from './output-builder';
import {
  LIVE_STATUSES, type InputItem, type OutputItem, type ResponseObject, type ResponseStatus, type ResponseStreamEvent, type ResponsesRequestBody,
  type StoredResponseData,
} from './protocol';
import { checkResponsesRequest, includesLogprobs, textFormatAsResponseFormat } from './request-checks';
import type { ResponsesStore } from './store';

export interface PreparedResponse {
  id: string;
  model: string;
  createdAt: number;
  body: ResponsesRequestBody;
  inputItems: InputItem[];
  /** The conversation the model answers (instructions excluded): what a follow-up continues. */
  conversation: ChatMessageDict[];
  prompt: PreparedPrompt;
  params: SamplingParams;
  engineRequest: EngineRequest;
  store: boolean;
  background: boolean;
  stream: boolean;
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

/** How often a background run saves its progress and checks it was not cancelled elsewhere. */
const PROGRESS_INTERVAL_MS = 1000;
const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

function notFound(id: string, param: string): OpenAIHttpError {
  return new OpenAIHttpError(404, `Response with id '${id}' not found.`, param);
}

export class ResponsesServing extends OpenAIServing {
  private readonly runs = new BackgroundRuns();
  private warnedReasoningSummary = false;

  constructor(
    engine: EngineClient,
    opts: ServingOptions,
    private readonly store: ResponsesStore,
  ) {
    super(engine, opts);
  }

  /** Listens for cancels and deletes from every replica (call once, before serving). */
  async start(): Promise<void> {
    await this.store.onStopped((id) => this.runs.get(id)?.abort.abort(new Error('response stopped')));
  }

  /** Validates, loads the previous response, renders the conversation; throws 400/404. `idBase`: see requestIdBase. */
  async prepare(body: ResponsesRequestBody, idBase: string): Promise<PreparedResponse> {
    const model = this.checkModel(body.model);
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
    const inputItems = normalizeInput(body.input);
    const history = await this.history(body);
    const conversation = [...history, ...itemsToMessages(inputItems)];
    this.engine.ensureCapacity(1);
    const prompt = await this.render(body, conversation, inputItems);
    const params = this.samplingParams(body, prompt);
    const [engineRequest] = buildEngineRequests([prompt], [params], body, () => id);
    return {
      id, model, createdAt: createdNow(), body, inputItems, conversation, prompt, params, engineRequest, store,
      background: !!body.background, stream: !!body.stream,
    };
  }

  /** The messages before this input: the previous response's conversation and output, or previous_input_messages. */
  private async history(body: ResponsesRequestBody): Promise<ChatMessageDict[]> {
    if (body.previous_input_messages != null) return checkPreviousInputMessages(body.previous_input_messages);
    const previousId = body.previous_response_id;
    if (previousId == null) return [];
    const previous = await this.store.get(previousId);
    if (!previous) throw notFound(previousId, 'previous_response_id');
    const data = previous.data as StoredResponseData;
    if (LIVE_STATUSES.includes(data.response.status)) {
      throw new RequestValidationError(`Previous response '${previousId}' is still ${data.response.status}.`, 'previous_response_id');
    }
    // The previous turn's reasoning is not shown to the model again (vLLM).
    return [...(data.conversation as ChatMessageDict[]), ...itemsToMessages(data.response.output, { skipReasoning: true })];
  }

  private async render(body: ResponsesRequestBody, conversation: ChatMessageDict[], inputItems: InputItem[]): Promise<PreparedPrompt> {
    const messages = body.instructions ? [{ role: 'system', content: body.instructions }, ...conversation] : conversation;
    const continueFinal = continuesFinalMessage(inputItems);
    const effort = body.reasoning?.effort;
    const maxModelLen = this.engine.maxModelLen;
    try {
      const [prompt] = await prepareChatPrompts(this.engine.text, this.engine.chatTemplate !== null, [prepareChatMessages(messages, 'input')], {
        addGenerationPrompt: !continueFinal,
        continueFinalMessage: continueFinal,
        addSpecialTokens: false,
        documents: null,
        chatTemplate: null,
        chatTemplateKwargs: chatTemplateKwargs(this.opts, { ...body.chat_template_kwargs, ...(effort != null ? { reasoning_effort: effort } : {}) }),
        trustRequestChatTemplate: false,
        // truncation 'auto' drops the oldest tokens so the prompt leaves room for the output.
        truncatePromptTokens: body.truncation === 'auto' ? Math.max(1, maxModelLen - (body.max_output_tokens ?? 1)) : null,
        truncationSide: 'left',
        maxModelLen,
      });
      return prompt;
    } catch (err) {
      if (err instanceof RequestValidationError && err.param === 'messages') throw new RequestValidationError(err.message, 'input');
      throw err;
    }
  }

  private samplingParams(body: ResponsesRequestBody, prompt: PreparedPrompt): SamplingParams {
    const fields: SamplingRequestFields = {
      temperature: body.temperature, top_p: body.top_p, top_k: body.top_k, repetition_penalty: body.repetition_penalty,
      seed: body.seed, stop: body.stop, ignore_eos: body.ignore_eos, logit_bias: body.logit_bias, vllm_xargs: body.vllm_xargs,
      skip_special_tokens: body.skip_special_tokens, include_stop_str_in_output: body.include_stop_str_in_output,
      // Structured outputs: text.format (as chat's response_format) or vLLM's structured_outputs, not both.
      response_format: textFormatAsResponseFormat(body),
      structured_outputs: body.structured_outputs,
    };
    try {
      return this.buildSamplingParams(body, prompt, fields);
    } catch (err) {
      // The mapping names chat's field; here the client sent text.format.
      if (err instanceof RequestValidationError && err.param?.startsWith('response_format')) {
        throw new RequestValidationError(err.message.replace(/response_format(\.json_schema)?/g, 'text.format'), 'text.format');
      }
      throw err;
    }
  }

  private buildSamplingParams(body: ResponsesRequestBody, prompt: PreparedPrompt, fields: SamplingRequestFields): SamplingParams {
    return buildSamplingParams(fields, {
      ...this.samplingContext(),
      sent: sentFields(fields),
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

  /** The response object before any output: every request field it echoes. */
  private shell(prep: PreparedResponse, status: ResponseStatus): ResponseObject {
    const { body, params } = prep;
    const response: ResponseObject = {
      id: prep.id,
      object: 'response',
      created_at: prep.createdAt,
      completed_at: null,
      status,
      background: prep.background,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: params.max_tokens ?? this.engine.maxModelLen - prep.prompt.tokenIds.length,
      max_tool_calls: body.max_tool_calls ?? null,
      metadata: body.metadata ?? null,
      model: prep.model,
      output: [],
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      prompt: null,
      reasoning: body.reasoning ?? null,
      service_tier: body.service_tier ?? 'auto',
      store: prep.store,
      temperature: params.temperature,
      text: body.text ?? { format: { type: 'text' } },
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      top_logprobs: body.top_logprobs ?? 0,
      top_p: params.top_p,
      truncation: body.truncation ?? 'disabled',
      usage: null,
      user: body.user ?? null,
    };
    if (body.kv_transfer_params != null) response.kv_transfer_params = body.kv_transfer_params;
    return response;
  }

  private finalResponse(prep: PreparedResponse, builder: OutputBuilder, state: PromptResult, status: ResponseStatus): ResponseObject {
    const choice = state.choices[0];
    const outputTokens = choice?.tokenIds.length ?? 0;
    const promptTokens = state.promptTokenIds.length || prep.prompt.tokenIds.length;
    const usage = this.usage(promptTokens, outputTokens, state.numCachedTokens);
    const response: ResponseObject = {
      ...this.shell(prep, status),
      completed_at: status === 'completed' ? createdNow() : null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      output: builder.items,
      usage: {
        input_tokens: usage.prompt_tokens,
        input_tokens_details: { cached_tokens: state.numCachedTokens },
        output_tokens: usage.completion_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.total_tokens,
      },
    };
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
    const shell = this.shell(prep, initialStatus);
    yield numbered({ type: 'response.created', response: shell });
    yield numbered({ type: 'response.in_progress', response: { ...shell, status: 'in_progress' } });
    const state: PromptResult = { promptTokenIds: prep.prompt.tokenIds, promptLogprobs: null, numCachedTokens: 0, choices: [] };
    const withLogprobs = includesLogprobs(prep.body);
    const namer = this.tokenNamer(false);
    try {
      while (!next.done) {
        foldOutput(state, next.value, OUTPUT_KIND.DELTA);
        for (const out of next.value.outputs) {
          const logprobs = withLogprobs ? chatLogprobEntries(out.logprobs ?? [], prep.body.top_logprobs ?? 0, namer) : [];
          // Without reasoning / tool-call parsers all output is text.
          for (const event of builder.add({ content: out.text }, logprobs)) yield numbered(event);
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
      const response: ResponseObject = {
        ...this.shell(prep, 'failed'),
        output: builder.items,
        error: { code: 'server_error', message: err instanceof Error ? err.message : String(err) },
      };
      yield { type: 'response.failed', sequence_number: last + 1, response };
    }
  }

  private record(prep: PreparedResponse, response: ResponseObject) {
    const data: StoredResponseData = { response, inputItems: prep.inputItems, conversation: prep.conversation };
    return { id: prep.id, status: response.status, data };
  }

  /** Non-streaming, in the foreground: the final response (stored when `store`). */
  async complete(prep: PreparedResponse, signal?: AbortSignal): Promise<ResponseObject> {
    let final: ResponseObject | null = null;
    for await (const event of this.events(prep, signal, 'in_progress')) {
      if (TERMINAL_EVENTS.has(event.type)) final = event.response as ResponseObject;
    }
    if (!final) throw new OpenAIHttpError(500, 'The response ended without a result.');
    if (prep.store) await this.store.put(this.record(prep, final));
    return final;
  }

  /** Streaming, in the foreground: the events; the final response is stored before its event goes out. */
  async *stream(prep: PreparedResponse, signal?: AbortSignal): AsyncGenerator<ResponseStreamEvent> {
    for await (const event of this.eventsOrFailure(prep, signal, 'in_progress')) {
      if (prep.store && TERMINAL_EVENTS.has(event.type)) await this.store.put(this.record(prep, event.response as ResponseObject));
      yield event;
    }
  }

  /**
   * Stores the queued response and runs it in the background (the client may leave). Every second
   * the run checks its stored status (and saves its progress once running); a response cancelled
   * or deleted on another replica is noticed there and its engine request aborted.
   */
  async startBackground(prep: PreparedResponse): Promise<ResponseObject> {
    const queued = this.shell(prep, 'queued');
    if (!(await this.store.put(this.record(prep, queued), { absent: true }))) {
      throw new RequestValidationError(`A response with id '${prep.id}' already exists.`, 'request_id');
    }
    const run = this.runs.start(prep.id);
    void this.runInBackground(prep, run);
    return queued;
  }

  private async runInBackground(prep: PreparedResponse, run: BackgroundRun): Promise<void> {
    const builder = new OutputBuilder();
    let current: ResponseObject = this.shell(prep, 'queued');
    const save = async (response: ResponseObject): Promise<void> => {
      const saved = await this.store.put(this.record(prep, response), { statusIn: LIVE_STATUSES }).catch((err: Error) => {
        console.error(`[responses] saving background response ${prep.id} failed: ${err.message}`);
        return true; // a store hiccup is not a cancel
      });
      if (!saved) run.abort.abort(new Error('response cancelled'));
    };
    // While it waits in the engine's queue the run only checks its status; once running it saves
    // its partial output too. Either way a cancel or delete from any replica shows up here.
    const timer = setInterval(() => {
      if (current.status === 'in_progress') {
        void save({ ...current, output: JSON.parse(JSON.stringify(builder.items)) as OutputItem[] });
        return;
      }
      void this.store.status(prep.id).then(
        (status) => {
          if (status === null || !LIVE_STATUSES.includes(status as ResponseStatus)) run.abort.abort(new Error('response cancelled'));
        },
        () => undefined,
      );
    }, PROGRESS_INTERVAL_MS);
    timer.unref();
    try {
      for await (const event of this.eventsOrFailure(prep, run.abort.signal, 'queued', builder)) {
        if (event.type === 'response.in_progress' || TERMINAL_EVENTS.has(event.type)) {
          current = event.response as ResponseObject;
          await save(current);
        }
        run.push(event);
      }
    } catch (err) {
      // Refused before it started (e.g. by the engine): the stored response says so.
      const failed = { ...current, status: 'failed' as const, error: { code: 'server_error', message: (err as Error).message } };
      await save(failed);
    } finally {
      clearInterval(timer);
      this.runs.finish(prep.id, run);
    }
  }

  /** The events of a background run this server is running (or ran lately), after `startingAfter`. */
  follow(id: string, startingAfter: number | null, signal?: AbortSignal): AsyncIterable<ResponseStreamEvent> {
    const run = this.runs.get(id);
    if (!run) {
      throw new RequestValidationError(
        `Response '${id}' has no event stream here: only background responses can be streamed, from the server running them, until a few minutes after they finish.`,
        'stream',
      );
    }
    return run.follow(startingAfter, signal);
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
      await this.announceStopped(id);
      return cancelled;
    }
  }

  async delete(id: string): Promise<{ id: string; object: 'response'; deleted: true }> {
    if (!(await this.store.delete(id))) throw notFound(id, 'response_id');
    await this.announceStopped(id);
    return { id, object: 'response', deleted: true };
  }

  /** The run stops here at once and on its own replica as soon as the news arrives (its status check backs this up). */
  private async announceStopped(id: string): Promise<void> {
    this.runs.get(id)?.abort.abort(new Error('response stopped'));
    await this.store.announceStopped(id).catch((err: Error) => console.error(`[responses] announcing the stop of ${id} failed: ${err.message}`));
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
    this.runs.abortAll();
    await this.store.close();
  }
}
