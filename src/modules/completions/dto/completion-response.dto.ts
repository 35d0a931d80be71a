// /v1/completions response body and stream chunk (documentation for the OpenAPI spec).

import { ApiProperty, ApiSchema, type ApiPropertyOptions } from '@nestjs/swagger';
import type { CompletionChoice, CompletionChunk, CompletionResponse } from '../../../serving/completion-serving';
import { CompletionLogprobsDto, PROMPT_LOGPROBS_SCHEMA, STREAM_CHUNK_USAGE, UsageDto } from '../../../common/dto/response-fields.dto';

const FINISH_REASONS = ['stop', 'length', 'abort', 'repetition'];

@ApiSchema({ name: 'CompletionResponseChoice' })
export class CompletionChoiceDto implements CompletionChoice {
  @ApiProperty({ type: 'integer', description: 'Choice index (prompt i, sample j: i * n + j).' })
  index!: number;
  @ApiProperty({ description: 'The generated text (streaming: the new text since the previous chunk).' })
  text!: string;
  @ApiProperty({ type: () => CompletionLogprobsDto, nullable: true, description: 'With logprobs: the tokens and their logprobs.' })
  logprobs!: CompletionLogprobsDto | null;
  @ApiProperty({ type: 'string', nullable: true, enum: [...FINISH_REASONS, null], description: 'Why generation ended; null until the last chunk of a stream.' })
  finish_reason!: string | null;
  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'integer' }], nullable: true, description: 'The stop string or token id that ended the choice.' })
  stop_reason!: string | number | null;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, required: false, description: 'With return_token_ids: the generated token ids.' })
  token_ids?: number[] | null;
  @ApiProperty({ ...PROMPT_LOGPROBS_SCHEMA, required: false } as ApiPropertyOptions)
  prompt_logprobs?: unknown;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, required: false, description: 'With return_token_ids: the prompt token ids.' })
  prompt_token_ids?: number[] | null;
}

/** Fields of both the response and a stream chunk. */
class CompletionObjectDto {
  @ApiProperty({ example: 'cmpl-3f2a…', description: 'cmpl-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ enum: ['text_completion'], description: 'Always text_completion.' })
  object!: 'text_completion';
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' })
  created!: number;
  @ApiProperty({ description: 'The served model name.' })
  model!: string;
  @ApiProperty({ type: () => CompletionChoiceDto, isArray: true, description: 'One choice per prompt and sample (n).' })
  choices!: CompletionChoiceDto[];
}

export class CompletionResponseDto extends CompletionObjectDto implements Omit<CompletionResponse, 'usage'> {
  @ApiProperty({ type: 'string', nullable: true, enum: [null], description: 'Always null.' })
  service_tier!: null;
  @ApiProperty({ type: 'string', nullable: true, enum: [null], description: 'Always null.' })
  system_fingerprint!: null;
  @ApiProperty({ type: () => UsageDto, description: 'Token counts of the whole request.' })
  usage!: UsageDto;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'The params a decode replica pulls the KV of this prefill with (--kv-transfer-config and do_remote_decode); null otherwise.' })
  kv_transfer_params!: Record<string, unknown> | null;
}

/** One `data:` frame of a streamed completion. */
export class CompletionStreamResponseDto extends CompletionObjectDto implements Omit<CompletionChunk, 'usage'> {
  @ApiProperty(STREAM_CHUNK_USAGE)
  usage?: UsageDto | null;
}
