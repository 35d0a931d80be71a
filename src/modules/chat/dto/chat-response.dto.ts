// /v1/chat/completions (and batch) response body (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { ChatChoice, ChatResponse } from '../../../serving/chat-serving';
import { ChatLogprobsDto, PROMPT_LOGPROBS_SCHEMA, UsageDto } from '../../../common/dto/response-fields.dto';
import { TOOL_CALL_SCHEMA } from '../../../common/dto/tool-fields';
import type { ToolCall } from '../../../serving/tool-parsers';

export class ChatMessageDto {
  @ApiProperty({ example: 'assistant', description: 'The --response-role.' }) role!: string;
  @ApiProperty({ type: 'string', nullable: true }) content!: string | null;
  @ApiProperty({ type: 'string', nullable: true, enum: [null] }) refusal!: null;
  @ApiProperty({ type: 'array', items: TOOL_CALL_SCHEMA, description: 'Calls the model made (tool_choice other than "none").' }) tool_calls!: ToolCall[];
  @ApiProperty({ type: 'string', nullable: true, description: 'The thinking, with --reasoning-parser (null without, or with include_reasoning false).' })
  reasoning!: string | null;
}

export class ChatChoiceDto implements ChatChoice {
  @ApiProperty({ type: 'integer', description: 'Choice index (batch: the conversation).' }) index!: number;
  @ApiProperty({ type: () => ChatMessageDto }) message!: ChatMessageDto;
  @ApiProperty({ type: () => ChatLogprobsDto, nullable: true }) logprobs!: ChatLogprobsDto | null;
  @ApiProperty({ enum: ['stop', 'length', 'tool_calls', 'abort', 'repetition'] }) finish_reason!: string;
  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'integer' }], nullable: true }) stop_reason!: string | number | null;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, required: false, description: 'With return_token_ids.' }) token_ids?: number[] | null;
}

export class ChatResponseDto implements ChatResponse {
  @ApiProperty({ example: 'chatcmpl-3f2a…' }) id!: string;
  @ApiProperty({ enum: ['chat.completion'] }) object!: 'chat.completion';
  @ApiProperty({ type: 'integer' }) created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => ChatChoiceDto, isArray: true }) choices!: ChatChoiceDto[];
  @ApiProperty({ type: 'string', nullable: true, enum: [null] }) service_tier!: null;
  @ApiProperty({ type: 'string', nullable: true, enum: [null] }) system_fingerprint!: null;
  @ApiProperty({ type: () => UsageDto }) usage!: UsageDto;
  @ApiProperty(PROMPT_LOGPROBS_SCHEMA) prompt_logprobs!: unknown;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, description: 'With return_token_ids.' }) prompt_token_ids!: number[] | null;
  @ApiProperty({ type: 'string', nullable: true, required: false, description: 'With return_prompt_text: the rendered prompt.' }) prompt_text?: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) kv_transfer_params!: Record<string, unknown> | null;
}
