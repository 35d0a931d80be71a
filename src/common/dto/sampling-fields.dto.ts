// Request fields shared by /v1/completions and /v1/chat/completions (and reusable by /render):
// OpenAI's sampling fields and vLLM's extra sampling / request parameters, with vLLM's names
// and defaults. Ranges are checked by the serving layer with vLLM's messages.

import { ApiSchema } from '@nestjs/swagger';
import type { RepetitionDetectionParams } from '../../engine/types';
import {
  BoolField, EnumField, IntField, IntListField, LogitBiasField, NestedField, NumberField, ObjectField, StopField,
  StringField, StringListField,
} from './api-field';
import { StructuredOutputsFieldsDto } from './structured-outputs.dto';

export class StreamOptionsDto {
  @BoolField({ description: 'Send a final chunk with the usage of the whole request before `data: [DONE]`.' })
  include_usage?: boolean | null;

  @BoolField({ description: 'With include_usage: every chunk also carries the usage so far.' })
  continuous_usage_stats?: boolean | null;
}

@ApiSchema({ name: 'RepetitionDetectionParams' })
export class RepetitionDetectionDto implements RepetitionDetectionParams {
  @IntField({ description: 'Largest n-gram checked.', required: true })
  max_pattern_size!: number;

  @IntField({ description: 'Smallest n-gram checked.', required: true })
  min_pattern_size!: number;

  @IntField({ description: 'How many back-to-back repeats end the request (finish_reason `repetition`).', required: true })
  min_count!: number;
}

export class SamplingFieldsDto extends StructuredOutputsFieldsDto {
  @StringField({ description: 'Served model name; omitted = the served model.' })
  model?: string | null;

  @IntField({ description: 'Number of choices to generate.', default: 1 })
  n?: number | null;

  @NumberField({ description: 'Sampling temperature; 0 = greedy. Default from generation_config.json, else 1.', default: 1 })
  temperature?: number | null;

  @NumberField({ description: 'Nucleus sampling threshold in (0, 1]. Default from generation_config.json, else 1.', default: 1 })
  top_p?: number | null;

  @IntField({ description: 'Keep the k most likely tokens; 0 or -1 disables.', default: 0 })
  top_k?: number | null;

  @NumberField({ description: 'Minimum probability relative to the most likely token, in [0, 1].', default: 0 })
  min_p?: number | null;

  @NumberField({ description: 'Presence penalty in [-2, 2].', default: 0 })
  presence_penalty?: number | null;

  @NumberField({ description: 'Frequency penalty in [-2, 2].', default: 0 })
  frequency_penalty?: number | null;

  @NumberField({ description: 'Repetition penalty in (0, 2]; 1 = none.', default: 1 })
  repetition_penalty?: number | null;

  @NumberField({ description: 'Beam search length penalty.', default: 1 })
  length_penalty?: number | null;

  @BoolField({ description: 'Use beam search (width n).', default: false })
  use_beam_search?: boolean | null;

  @IntField({ description: 'Seed of this request\'s own random generator.' })
  seed?: number | null;

  @StopField({ description: 'Strings that end generation (not included in the output).', default: [] })
  stop?: string | string[] | null;

  @IntListField({ description: 'Token ids that end generation.', default: [] })
  stop_token_ids?: number[] | null;

  @BoolField({ description: 'Keep the matched stop string in the output.', default: false })
  include_stop_str_in_output?: boolean | null;

  @BoolField({ description: 'Keep generating after EOS.', default: false })
  ignore_eos?: boolean | null;

  @IntField({ description: 'Most tokens to generate.' })
  max_tokens?: number | null;

  @IntField({ description: 'Fewest tokens to generate before EOS / stop ids count.', default: 0 })
  min_tokens?: number | null;

  @BoolField({ description: 'Leave special tokens out of the text.', default: true })
  skip_special_tokens?: boolean | null;

  @BoolField({ description: 'Put spaces between special tokens in the text.', default: true })
  spaces_between_special_tokens?: boolean | null;

  @IntField({ description: 'Keep only this many prompt tokens (-1 = max_model_len).' })
  truncate_prompt_tokens?: number | null;

  @EnumField(['left', 'right'], { description: "With truncate_prompt_tokens: 'left' keeps the last N tokens (default), 'right' the first N." })
  truncation_side?: 'left' | 'right' | null;

  @LogitBiasField({ description: 'Bias added to the logits of token ids, clamped to [-100, 100].' })
  logit_bias?: Record<string, number> | null;

  @IntListField({ description: 'Only these token ids may be sampled.' })
  allowed_token_ids?: number[] | null;

  @StringListField({ description: 'Words that may not be generated.', default: [] })
  bad_words?: string[] | null;

  @IntField({ description: 'Top logprobs to return for each prompt token.' })
  prompt_logprobs?: number | null;

  @IntListField({ description: 'Token ids to report logprobs for at each position (instead of the top-k); needs logprobs.' })
  logprob_token_ids?: number[] | null;

  @NestedField(() => RepetitionDetectionDto, { description: 'End the request when an n-gram repeats.' })
  repetition_detection?: RepetitionDetectionDto | null;

  @BoolField({ description: 'Stream the response as server-sent events.', default: false })
  stream?: boolean | null;

  @NestedField(() => StreamOptionsDto, { description: 'Usage reporting while streaming.' })
  stream_options?: StreamOptionsDto | null;

  @StringField({ description: 'End-user id (accepted, not used).' })
  user?: string | null;

  @IntField({ description: 'Scheduling priority (lower first); needs --scheduling-policy priority when non-zero.', default: 0 })
  priority?: number | null;

  @StringField({ description: 'Base of the response id (the X-Request-Id header wins).' })
  request_id?: string | null;

  @StringField({ description: 'Salt for the prefix cache: requests with different salts never share cached blocks.' })
  cache_salt?: string | null;

  @ObjectField({ description: 'KV-transfer parameters for disaggregated serving (accepted and echoed).' })
  kv_transfer_params?: Record<string, unknown> | null;

  @ObjectField({ description: 'Encoder-cache transfer parameters (accepted; a text-only model has no encoder cache to transfer).' })
  ec_transfer_params?: Record<string, unknown> | null;

  @ObjectField({ description: 'Extra parameters (string / number values) for custom extensions.' })
  vllm_xargs?: Record<string, unknown> | null;

  @BoolField({ description: 'Logprob tokens as "token_id:N" strings.' })
  return_tokens_as_token_ids?: boolean | null;

  @BoolField({ description: 'Return the prompt and output token ids alongside the text.' })
  return_token_ids?: boolean | null;
}
