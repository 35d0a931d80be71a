// The sampling fields of a completion / chat request (OpenAI names plus vLLM's extras), as the
// client sent them. DTOs implement this; /render reuses it.

import type { RepetitionDetectionParams } from '../engine/types';
import type { StructuredOutputsRequestFields } from './structured-outputs';

export interface SamplingRequestFields extends StructuredOutputsRequestFields {
  n?: number | null;
  best_of?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  length_penalty?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  include_stop_str_in_output?: boolean | null;
  ignore_eos?: boolean | null;
  max_tokens?: number | null;
  /** Chat only; takes precedence over max_tokens. */
  max_completion_tokens?: number | null;
  min_tokens?: number | null;
  skip_special_tokens?: boolean | null;
  spaces_between_special_tokens?: boolean | null;
  truncate_prompt_tokens?: number | null;
  truncation_side?: 'left' | 'right' | null;
  logit_bias?: Record<string, number> | null;
  allowed_token_ids?: number[] | null;
  bad_words?: string[] | null;
  prompt_logprobs?: number | null;
  logprob_token_ids?: number[] | null;
  repetition_detection?: RepetitionDetectionParams | null;
  use_beam_search?: boolean | null;
  vllm_xargs?: Record<string, unknown> | null;
  stream?: boolean | null;
}

/** Fields the caller actually sent (null counts as not sent, as vLLM's `None` defaults do). */
export function sentFields(body: object): Set<string> {
  const sent = new Set<string>();
  for (const [key, value] of Object.entries(body)) if (value !== undefined && value !== null) sent.add(key);
  return sent;
}
