// Request shapes of /v1/completions/derender and /v1/chat/completions/derender, as the DTOs
// validate them. A generate response comes back from a client, so most fields may be missing.

import type { DerenderStreamStateInput } from './stream-state';

interface GenerateLogProbInput {
  token_id: number;
  logprob: number;
  rank?: number | null;
}

/** output_mode "tokens" logprobs (GenerateLogProbs) as sent back. */
export interface GenerateLogProbsInput {
  content?: (GenerateLogProbInput & { top_logprobs?: GenerateLogProbInput[] | null })[] | null;
}

export interface GenerateChoiceInput {
  index: number;
  finish_reason?: string | null;
  token_ids?: number[] | null;
  logprobs?: GenerateLogProbsInput | null;
}

/** One /inference/v1/generate stream chunk. */
export interface GenerateChunkInput {
  request_id: string;
  output_mode?: string | null;
  choices: GenerateChoiceInput[];
  usage?: { prompt_tokens: number; completion_tokens?: number | null } | null;
  prompt_token_ids?: number[] | null;
}

/** A whole /inference/v1/generate response. */
export interface GenerateResponseInput extends GenerateChunkInput {
  prompt_logprobs?: unknown[] | null;
  kv_transfer_params?: Record<string, unknown> | null;
}

export interface DerenderCompletionRequest {
  model?: string | null;
  generate_responses: GenerateResponseInput[];
  prompt_tokens?: number[] | null;
  prompt_token_ids?: (number[] | null)[] | null;
  completion_request?: Record<string, unknown> | null;
}

export interface DerenderChatRequest {
  model?: string | null;
  generate_response: GenerateResponseInput;
  prompt_tokens?: number | null;
  prompt_token_ids?: number[] | null;
  chat_request?: Record<string, unknown> | null;
}

/** The one-chunk form: a generate stream chunk plus the state the client carries between calls. */
interface DerenderStreamRequest {
  model?: string | null;
  generate_chunk: GenerateChunkInput;
  stream_state?: DerenderStreamStateInput | null;
  prompt_tokens?: number | null;
  prompt_token_ids?: number[] | null;
}

export interface DerenderCompletionStreamRequest extends DerenderStreamRequest {
  completion_request?: Record<string, unknown> | null;
}

export interface DerenderChatStreamRequest extends DerenderStreamRequest {
  chat_request?: Record<string, unknown> | null;
}
