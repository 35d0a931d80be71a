// The response object, input-item list and deletion answer of /v1/responses, for the OpenAPI
// spec. Classes implement the serving layer's types so the documented shape cannot drift.

import { ApiProperty } from '@nestjs/swagger';
import type { InputItemList } from '../../../serving/responses/responses-serving';
import type { InputItem, OutputItem, ResponseObject, ResponseStatus, ResponseUsage } from '../../../serving/responses/protocol';

const OUTPUT_ITEM_SCHEMA = {
  type: 'object',
  description: "A 'message' (content: output_text parts with annotations and logprobs), a 'function_call' (call_id, name, arguments) or a 'reasoning' item.",
  additionalProperties: true,
};

export class ResponseUsageDto implements ResponseUsage {
  @ApiProperty({ type: 'integer' }) input_tokens!: number;
  @ApiProperty({ type: 'object', properties: { cached_tokens: { type: 'integer' } } }) input_tokens_details!: { cached_tokens: number };
  @ApiProperty({ type: 'integer' }) output_tokens!: number;
  @ApiProperty({ type: 'object', properties: { reasoning_tokens: { type: 'integer' } } }) output_tokens_details!: { reasoning_tokens: number };
  @ApiProperty({ type: 'integer' }) total_tokens!: number;
}

export class ResponseObjectDto implements ResponseObject {
  @ApiProperty({ example: 'resp_0123456789abcdef0123456789abcdef' }) id!: string;
  @ApiProperty({ enum: ['response'] }) object!: 'response';
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) completed_at!: number | null;
  @ApiProperty({ enum: ['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'] }) status!: ResponseStatus;
  @ApiProperty() background!: boolean;
  @ApiProperty({ type: 'object', nullable: true, properties: { code: { type: 'string' }, message: { type: 'string' } } }) error!: { code: string; message: string } | null;
  @ApiProperty({ type: 'object', nullable: true, properties: { reason: { type: 'string', enum: ['max_output_tokens'] } } }) incomplete_details!: { reason: 'max_output_tokens' } | null;
  @ApiProperty({ type: 'string', nullable: true }) instructions!: string | null;
  @ApiProperty({ type: 'integer' }) max_output_tokens!: number;
  @ApiProperty({ type: 'integer', nullable: true }) max_tool_calls!: number | null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: { type: 'string' } }) metadata!: Record<string, string> | null;
  @ApiProperty() model!: string;
  @ApiProperty({ type: 'array', items: OUTPUT_ITEM_SCHEMA }) output!: OutputItem[];
  @ApiProperty() parallel_tool_calls!: boolean;
  @ApiProperty({ type: 'string', nullable: true }) previous_response_id!: string | null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: 'Always null (prompt templates are not supported).' }) prompt!: null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true }) reasoning!: ResponseObject['reasoning'];
  @ApiProperty() service_tier!: string;
  @ApiProperty() store!: boolean;
  @ApiProperty() temperature!: number;
  @ApiProperty({ type: 'object', additionalProperties: true }) text!: ResponseObject['text'];
  @ApiProperty({ description: "'auto', 'none', 'required' or a named function." }) tool_choice!: unknown;
  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: true } }) tools!: unknown[];
  @ApiProperty({ type: 'integer' }) top_logprobs!: number;
  @ApiProperty() top_p!: number;
  @ApiProperty({ enum: ['auto', 'disabled'] }) truncation!: 'auto' | 'disabled';
  @ApiProperty({ type: () => ResponseUsageDto, nullable: true }) usage!: ResponseUsageDto | null;
  @ApiProperty({ type: 'string', nullable: true }) user!: string | null;
  @ApiProperty({ required: false, nullable: true, type: 'array', items: { type: 'object', additionalProperties: true }, description: 'vLLM, with enable_response_messages: the prompt text and its token ids.' })
  input_messages?: ResponseObject['input_messages'];
  @ApiProperty({ required: false, nullable: true, type: 'array', items: { type: 'object', additionalProperties: true }, description: 'vLLM, with enable_response_messages: the output text and its token ids.' })
  output_messages?: ResponseObject['output_messages'];
}

export class InputItemListDto implements InputItemList {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: true } }) data!: InputItem[];
  @ApiProperty({ type: 'string', nullable: true }) first_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class DeletedResponseDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['response'] }) object!: 'response';
  @ApiProperty() deleted!: boolean;
}
