// A /v1/responses request once checked and rendered (what every path runs from), and the objects
// made from it alone: the response object before any output, and the record the store keeps.

import type { EngineRequest, SamplingParams } from '../../engine/types';
import type { ChoiceOutputRules } from '../chat-message';
import type { ChoiceParsing } from '../chat-output';
import type { PreparedPrompt } from '../completion-prompts';
import type { ChatMessageDict } from './input-items';
import type { InputItem, ResponseObject, ResponseStatus, ResponsesRequestBody, StoredResponseData } from './protocol';
import type { StoredRecord } from './store';

export interface PreparedResponse {
  id: string;
  model: string;
  createdAt: number;
  body: ResponsesRequestBody;
  inputItems: InputItem[];
  /** The conversation the model answers (instructions excluded): what a follow-up continues. */
  conversation: ChatMessageDict[];
  /** How many responses the previous_response_id chain links, this one included. */
  chainDepth: number;
  prompt: PreparedPrompt;
  params: SamplingParams;
  /** The output token limit the response reports (max_output_tokens, or what the context leaves). */
  maxOutputTokens: number;
  engineRequest: EngineRequest;
  /** How the output splits into reasoning, text and function calls. */
  parsing: ChoiceParsing;
  outputRules: ChoiceOutputRules;
  store: boolean;
  background: boolean;
  stream: boolean;
}

/** The stream events that end a run with its final response. */
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** The response object before any output: every request field it echoes. */
export function responseShell(prep: PreparedResponse, status: ResponseStatus): ResponseObject {
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
    max_output_tokens: prep.maxOutputTokens,
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
  return response;
}

/** The response as failed by `err` after some output: what a stream's response.failed event carries. */
export function failedResponse(response: ResponseObject, err: unknown): ResponseObject {
  return { ...response, status: 'failed', error: { code: 'server_error', message: err instanceof Error ? err.message : String(err) } };
}

/** What the store keeps for `response`: the object, its input items and the conversation a follow-up continues. */
export function storedRecord(prep: PreparedResponse, response: ResponseObject): StoredRecord {
  const data: StoredResponseData = { response, inputItems: prep.inputItems, conversation: prep.conversation, chainDepth: prep.chainDepth };
  return { id: prep.id, status: response.status, data };
}
