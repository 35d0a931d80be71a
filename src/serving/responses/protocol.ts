// The Responses API's objects as ortllm sends and stores them: OpenAI's shapes (response,
// output items, usage, stream events) plus vLLM's extra request and response fields.

import type { ChatLogprobEntry } from '../logprobs';
import type { RequestExtras } from '../serving-options';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';
/** Statuses a response can still leave (writes to the store are conditioned on them). */
export const LIVE_STATUSES: readonly ResponseStatus[] = ['queued', 'in_progress'];

/** An item of the `input` list, as accepted (and returned by input_items, with an id). */
export interface InputItem {
  id?: string;
  type: string;
  [key: string]: unknown;
}

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs?: ChatLogprobEntry[];
}

export interface MessageItem {
  id: string;
  type: 'message';
  role: 'assistant';
  status: 'in_progress' | 'completed' | 'incomplete';
  content: OutputText[];
}

export interface FunctionCallItem {
  id: string;
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

export interface ReasoningText {
  type: 'reasoning_text';
  text: string;
}

export interface ReasoningItem {
  id: string;
  type: 'reasoning';
  summary: unknown[];
  content: ReasoningText[];
  status: 'in_progress' | 'completed' | 'incomplete';
}

export type OutputItem = MessageItem | FunctionCallItem | ReasoningItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** vLLM's enable_response_messages entries: the raw prompt / output text with its token ids. */
export interface RawMessageAndTokens {
  type: 'raw_message_tokens';
  message: string;
  tokens: number[];
}

export interface TextConfig {
  format?: { type: string; [key: string]: unknown } | null;
  [key: string]: unknown;
}

export interface ReasoningConfig {
  effort?: string | null;
  summary?: string | null;
  [key: string]: unknown;
}

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  background: boolean;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  instructions: string | null;
  max_output_tokens: number;
  max_tool_calls: number | null;
  metadata: Record<string, string> | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt: null;
  reasoning: ReasoningConfig | null;
  service_tier: string;
  store: boolean;
  temperature: number;
  text: TextConfig;
  tool_choice: unknown;
  tools: unknown[];
  top_logprobs: number;
  top_p: number;
  truncation: 'auto' | 'disabled';
  usage: ResponseUsage | null;
  user: string | null;
  /** vLLM, with enable_response_messages. */
  input_messages?: RawMessageAndTokens[] | null;
  output_messages?: RawMessageAndTokens[] | null;
  kv_transfer_params?: Record<string, unknown> | null;
}

/** A stream event: `type` is also the SSE `event:` name. */
export interface ResponseStreamEvent {
  type: string;
  sequence_number: number;
  [key: string]: unknown;
}

/** What the store keeps per response: GET's object, input_items' list, and what a follow-up continues. */
export interface StoredResponseData {
  response: ResponseObject;
  inputItems: InputItem[];
  /** The conversation this response answered (instructions excluded), as chat messages. */
  conversation: Array<Record<string, unknown>>;
  /** How many responses the previous_response_id chain links, this one included (absent: 1). */
  chainDepth?: number;
}

export interface ResponsesRequestBody extends RequestExtras {
  model?: string | null;
  input?: unknown;
  instructions?: string | null;
  max_output_tokens?: number | null;
  max_tool_calls?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  top_logprobs?: number | null;
  text?: TextConfig | null;
  tools?: unknown[] | null;
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  reasoning?: ReasoningConfig | null;
  store?: boolean | null;
  background?: boolean | null;
  stream?: boolean | null;
  previous_response_id?: string | null;
  metadata?: Record<string, string> | null;
  truncation?: 'auto' | 'disabled' | null;
  user?: string | null;
  include?: string[] | null;
  service_tier?: string | null;
  prompt?: unknown;
  logit_bias?: Record<string, number> | null;
  skip_special_tokens?: boolean | null;
  include_stop_str_in_output?: boolean | null;
  structured_outputs?: unknown;
  repetition_penalty?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  ignore_eos?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  enable_response_messages?: boolean | null;
  previous_input_messages?: unknown[] | null;
  [key: string]: unknown;
}
