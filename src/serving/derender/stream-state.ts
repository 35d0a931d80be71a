// The client-carried state of streaming derender (vLLM's DerenderStreamState field names).
// ortllm replays `output_token_ids` through a fresh detokenizer on every call, so no
// detokenizer internals cross the wire; `logprob_text_offset` is the text emitted so far.

import { OpenAIHttpError } from '../openai-error';

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

/** The state as sent: any field may be missing. */
export type DerenderStreamStateInput = { [K in keyof DerenderStreamState]?: DerenderStreamState[K] | null };

/** Fills defaults (first call: null) and refuses an inconsistent state with 400. */
export function checkStreamState(state: DerenderStreamStateInput | null): DerenderStreamState {
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
    throw OpenAIHttpError.badRequest(`Inconsistent stream_state: ${message}`, `stream_state.${field}`);
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

/** The state after a chunk brought `tokenIds` and `emitted` characters of text. */
export function advanceStreamState(state: DerenderStreamState, tokenIds: readonly number[], emitted: number): DerenderStreamState {
  const output = [...state.output_token_ids, ...tokenIds];
  return {
    ...state,
    logprob_context_token_ids: output.slice(-4),
    logprob_text_offset: state.logprob_text_offset + emitted,
    output_token_ids: output,
    output_chunk_lens: tokenIds.length > 0 ? [...state.output_chunk_lens, tokenIds.length] : state.output_chunk_lens,
  };
}
