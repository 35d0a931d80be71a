// Wire shapes of /inference/v1/generate (vLLM's GenerateRequest and Generate{Tokens,Text}[Stream]Response).
// Plain interfaces: the serving class takes and builds these; the DTO classes of
// src/modules/tokens-generate/dto validate and document them in OpenAPI.

import type { SamplingParams } from '../../engine/types';
import type { ChatLogprobs, PromptLogprobEntry } from '../logprobs';
import type { StreamOptions, UsageInfo } from '../usage';
import type { GenerateLogProbs } from './tokens-logprobs';

export const OUTPUT_MODES = ['tokens', 'text'] as const;
export type OutputMode = (typeof OUTPUT_MODES)[number];

/** The request body, as validated by the DTO (unknown fields are ignored). */
export interface GenerateRequest {
  request_id?: string | null;
  token_ids: number[];
  /** vLLM's engine SamplingParams (snake_case), normalised and range-checked by the engine's rules. */
  sampling_params: Partial<SamplingParams> & Record<string, unknown>;
  model?: string | null;
  output_mode?: OutputMode | null;
  stream?: boolean | null;
  stream_options?: StreamOptions | null;
  cache_salt?: string | null;
  priority?: number | null;
  return_token_ids?: boolean | null;
  kv_transfer_params?: Record<string, unknown> | null;
  ec_transfer_params?: Record<string, unknown> | null;
  token_offsets?: [number, number][] | null;
  features?: Record<string, unknown> | null;
  content_parts?: Record<string, unknown>[] | null;
  reasoning_ended?: boolean | null;
  reasoning_parser_kwargs?: Record<string, unknown> | null;
}

/** Half-open range of output-token indexes generated with one weight version. */
export interface WeightVersionSpan {
  version: string;
  start: number;
  end: number;
}

export interface GenerateChoice {
  index: number;
  finish_reason: string | null;
  token_ids: number[];
  /** tokens mode: GenerateLogProbs (token ids); text mode: OpenAI chat logprobs (token, bytes). */
  logprobs: GenerateLogProbs | ChatLogprobs | null;
  routed_experts: string | null;
  sampling_mask: number[][] | null;
  weight_versions: WeightVersionSpan[] | null;
  /** output_mode "text" only. */
  text?: string;
}

export interface GenerateResponse {
  request_id: string;
  output_mode: OutputMode;
  model: string;
  created: number;
  choices: GenerateChoice[];
  usage: UsageInfo;
  prompt_logprobs: (Record<string, PromptLogprobEntry> | null)[] | null;
  prompt_token_ids: number[] | null;
  mm_placeholders: null;
  metrics: null;
  kv_transfer_params: Record<string, unknown> | null;
  ec_transfer_params: Record<string, unknown> | null;
}

export interface GenerateStreamResponse {
  request_id: string;
  output_mode: OutputMode;
  choices: GenerateChoice[];
  usage?: UsageInfo | null;
  prompt_token_ids?: number[] | null;
  mm_placeholders?: null;
  metrics?: null;
}
