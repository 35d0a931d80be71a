// /v1/completions response body (documentation for the OpenAPI spec).

import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';
import type { CompletionChoice, CompletionResponse } from '../../../serving/completion-serving';
import { CompletionLogprobsDto, PROMPT_LOGPROBS_SCHEMA, UsageDto } from '../../../common/dto/response-fields.dto';

export class CompletionChoiceDto implements CompletionChoice {
  @ApiProperty({ type: 'integer' }) index!: number;
  @ApiProperty() text!: string;
  @ApiProperty({ type: () => CompletionLogprobsDto, nullable: true }) logprobs!: CompletionLogprobsDto | null;
  @ApiProperty({ type: 'string', nullable: true, enum: ['stop', 'length', 'abort', 'repetition'] }) finish_reason!: string | null;
  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'integer' }], nullable: true, description: 'The stop string or token id that ended the choice.' })
  stop_reason!: string | number | null;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, required: false, description: 'With return_token_ids.' }) token_ids?: number[] | null;
  @ApiProperty({ ...PROMPT_LOGPROBS_SCHEMA, required: false } as ApiPropertyOptions) prompt_logprobs?: unknown;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, required: false, description: 'With return_token_ids.' }) prompt_token_ids?: number[] | null;
}

export class CompletionResponseDto implements CompletionResponse {
  @ApiProperty({ example: 'cmpl-3f2a…' }) id!: string;
  @ApiProperty({ enum: ['text_completion'] }) object!: 'text_completion';
  @ApiProperty({ type: 'integer' }) created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => CompletionChoiceDto, isArray: true }) choices!: CompletionChoiceDto[];
  @ApiProperty({ type: 'string', nullable: true, enum: [null] }) service_tier!: null;
  @ApiProperty({ type: 'string', nullable: true, enum: [null] }) system_fingerprint!: null;
  @ApiProperty({ type: () => UsageDto }) usage!: UsageDto;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) kv_transfer_params!: Record<string, unknown> | null;
}
