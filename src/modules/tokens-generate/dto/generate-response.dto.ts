// Response shapes of /inference/v1/generate (vLLM's GenerateTokensResponse / GenerateTextResponse
// and their stream chunks). They document the responses in OpenAPI, and the tokens-mode classes
// are also validated input of /derender, which takes a generate response back.

import { ApiSchema } from '@nestjs/swagger';
import { UsageDto } from '../../../common/dto/response-fields.dto';
import { EnumField, IntField, IntListField, JsonListField, NestedField, NumberField, ObjectField, StringField } from '../../../common/dto/api-field';
import { OUTPUT_MODES } from '../../../serving/generate/generate-types';

export class GenerateLogProbDto {
  @IntField({ required: true, description: 'Token id.' })
  token_id!: number;

  @NumberField({ description: 'Log probability (-9999.0 for -inf or NaN).' })
  logprob!: number;

  @IntField({ description: '1-based rank in the distribution; null when unknown.' })
  rank?: number | null;
}

export class GenerateLogProbsContentDto extends GenerateLogProbDto {
  @NestedField(() => GenerateLogProbDto, { isArray: true, description: 'The sampled token first, then the other candidates by rank.' })
  top_logprobs?: GenerateLogProbDto[] | null;
}

export class GenerateLogProbsDto {
  @NestedField(() => GenerateLogProbsContentDto, { isArray: true, description: 'One entry per generated token.' })
  content?: GenerateLogProbsContentDto[] | null;
}

export class WeightVersionSpanDto {
  @StringField({ description: 'Weight version label ("default" until a weight update).' })
  version!: string;

  @IntField({ required: true, description: 'First output-token index (inclusive).' })
  start!: number;

  @IntField({ required: true, description: 'Last output-token index (exclusive).' })
  end!: number;
}

@ApiSchema({ name: 'GenerateResponseChoice' })
export class GenerateChoiceDto {
  @IntField({ required: true, description: 'Choice index (0..n-1).' })
  index!: number;

  @StringField({ description: 'stop | length | abort | repetition; null until the last stream chunk.' })
  finish_reason?: string | null;

  @IntListField({ description: 'Generated token ids (streaming: the delta).' })
  token_ids?: number[] | null;

  @NestedField(() => GenerateLogProbsDto, {
    description: 'tokens mode: {content:[{token_id, logprob, rank, top_logprobs}]}; text mode: OpenAI chat logprobs with token and bytes.',
  })
  logprobs?: GenerateLogProbsDto | null;

  @StringField({ description: 'Routed MoE experts (base64 .npy); always null here.' })
  routed_experts?: string | null;

  @JsonListField({ description: 'Sampling mask; always null here.' }, { type: 'array', items: { type: 'integer' } })
  sampling_mask?: number[][] | null;

  @NestedField(() => WeightVersionSpanDto, { isArray: true, description: 'Weight version per output range (streaming: last chunk only).' })
  weight_versions?: WeightVersionSpanDto[] | null;

  @StringField({ description: 'output_mode "text" only: the text (streaming: the delta since the previous chunk).' })
  text?: string | null;
}

/** Fields of both the full response and a stream chunk. */
export class GenerateStreamResponseDto {
  @StringField({ description: 'generate-tokens-<id>: the id to pass to /inference/v1/abort_requests.' })
  request_id!: string;

  @EnumField(OUTPUT_MODES, { description: 'Echo of the request output_mode; missing means tokens (older servers).' })
  output_mode?: string | null;

  @NestedField(() => GenerateChoiceDto, {
    isArray: true,
    required: true,
    description: 'One choice per sequence (n). Streaming: one per chunk, interleaved by index; the final usage chunk has none.',
  })
  choices!: GenerateChoiceDto[];

  @NestedField(() => UsageDto, {
    description: 'Token counts. Streaming: on every chunk with continuous_usage_stats, on the final chunk with include_usage.',
  })
  usage?: UsageDto | null;

  @IntListField({ description: 'Prompt token ids, with return_token_ids (streaming: first chunk only).' })
  prompt_token_ids?: number[] | null;

  @ObjectField({ description: 'Multimodal placeholder ranges; always null here.' })
  mm_placeholders?: Record<string, unknown> | null;

  @ObjectField({ description: 'Per-request metrics; always null here.' })
  metrics?: Record<string, unknown> | null;
}

/** The non-streaming body. */
export class GenerateResponseDto extends GenerateStreamResponseDto {
  @StringField({ description: 'Served model name.' })
  model?: string | null;

  @IntField({ description: 'Unix seconds.' })
  created?: number | null;

  @JsonListField({ description: 'Per prompt position {token_id: {logprob, rank, decoded_token}}, first null (sampling_params.prompt_logprobs).' })
  prompt_logprobs?: unknown[] | null;

  @ObjectField({ description: 'The params a decode replica pulls the KV of this prefill with (--kv-transfer-config and do_remote_decode); null otherwise.' })
  kv_transfer_params?: Record<string, unknown> | null;

  @ObjectField({ description: 'Echo of the request ec_transfer_params.' })
  ec_transfer_params?: Record<string, unknown> | null;
}
