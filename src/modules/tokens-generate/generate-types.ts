// Wire shapes of /inference/v1/generate responses (vLLM's Generate{Tokens,Text}[Stream]Response).
// Plain interfaces: the service builds these; the DTO classes in dto/ document them in OpenAPI.

import type { ChatLogprobs, PromptLogprobEntry } from '../../serving/logprobs';
import type { UsageInfo } from '../../serving/usage';
import type { GenerateLogProbs } from './tokens-logprobs';

export const OUTPUT_MODES = ['tokens', 'text'] as const;
export type OutputMode = (typeof OUTPUT_MODES)[number];

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
