// /v1/chat/completions (and batch) response body and stream chunk (documentation for the
// OpenAPI spec). @ApiSchema names are vLLM's protocol names.

import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { ChatChoice, ChatChunk, ChatChunkChoice, ChatResponse } from '../../../serving/chat-serving';
import { ChatLogprobsDto, PROMPT_LOGPROBS_SCHEMA, STREAM_CHUNK_USAGE, UsageDto } from '../../../common/dto/response-fields.dto';
import { TOOL_CALL_DELTA_SCHEMA, TOOL_CALL_SCHEMA } from '../../../common/dto/tool-fields';
import type { ToolCall, ToolCallDelta } from '../../../serving/tool-parsers';

const FINISH_REASONS = ['stop', 'length', 'tool_calls', 'abort', 'repetition'];

export class ChatMessageDto {
  @ApiProperty({ example: 'assistant', description: 'The --response-role.' })
  role!: string;
  @ApiProperty({ type: 'string', nullable: true, description: 'The generated text (without the thinking and the tool calls the parsers took out).' })
  content!: string | null;
  @ApiProperty({ type: 'string', nullable: true, enum: [null], description: 'Always null.' })
  refusal!: null;
  @ApiProperty({ type: 'array', items: TOOL_CALL_SCHEMA, description: 'The calls the model made (empty with tool_choice "none").' })
  tool_calls!: ToolCall[];
  @ApiProperty({ type: 'string', nullable: true, description: 'The thinking, with --reasoning-parser (null without it, or with include_reasoning false).' })
  reasoning!: string | null;
}

@ApiSchema({ name: 'ChatCompletionResponseChoice' })
export class ChatChoiceDto implements ChatChoice {
  @ApiProperty({ type: 'integer', description: 'Choice index (batch: the conversation).' })
  index!: number;
  @ApiProperty({ type: () => ChatMessageDto, description: 'The generated message.' })
  message!: ChatMessageDto;
  @ApiProperty({ type: () => ChatLogprobsDto, nullable: true, description: 'With logprobs: the tokens and their logprobs.' })
  logprobs!: ChatLogprobsDto | null;
  @ApiProperty({ enum: FINISH_REASONS, description: 'Why generation ended.' })
  finish_reason!: string;
  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'integer' }], nullable: true, description: 'The stop string or token id that ended the choice.' })
  stop_reason!: string | number | null;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, required: false, description: 'With return_token_ids: the generated token ids.' })
  token_ids?: number[] | null;
}

/** Fields of both the response and a stream chunk. */
class ChatObjectDto {
  @ApiProperty({ example: 'chatcmpl-3f2a…', description: 'chatcmpl-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' })
  created!: number;
  @ApiProperty({ description: 'The served model name.' })
  model!: string;
}

@ApiSchema({ name: 'ChatCompletionResponse' })
export class ChatResponseDto extends ChatObjectDto implements Omit<ChatResponse, 'usage'> {
  @ApiProperty({ enum: ['chat.completion'], description: 'Always chat.completion.' })
  object!: 'chat.completion';
  @ApiProperty({ type: () => ChatChoiceDto, isArray: true, description: 'One choice per sample (n); batch: one per conversation.' })
  choices!: ChatChoiceDto[];
  @ApiProperty({ type: 'string', nullable: true, enum: [null], description: 'Always null.' })
  service_tier!: null;
  @ApiProperty({ type: 'string', nullable: true, enum: [null], description: 'Always null.' })
  system_fingerprint!: null;
  @ApiProperty({ type: () => UsageDto, description: 'Token counts of the whole request.' })
  usage!: UsageDto;
  @ApiProperty(PROMPT_LOGPROBS_SCHEMA)
  prompt_logprobs!: unknown;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, description: 'With return_token_ids: the prompt token ids.' })
  prompt_token_ids!: number[] | null;
  @ApiProperty({ type: 'string', nullable: true, required: false, description: 'With return_prompt_text: the rendered prompt.' })
  prompt_text?: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'The params a decode replica pulls the KV of this prefill with (--kv-transfer-config and do_remote_decode); null otherwise.' })
  kv_transfer_params!: Record<string, unknown> | null;
}

export class DeltaMessageDto {
  @ApiProperty({ required: false, description: 'The --response-role, on the first chunk of each choice.' })
  role?: string;
  @ApiProperty({ required: false, description: 'The new text since the previous chunk.' })
  content?: string;
  @ApiProperty({ required: false, description: 'With --reasoning-parser: the new thinking text.' })
  reasoning?: string;
  @ApiProperty({
    type: 'array',
    items: TOOL_CALL_DELTA_SCHEMA,
    required: false,
    description: 'Tool-call fragments: a call\'s first one has id, type and function.name; later ones function.arguments to append.',
  })
  tool_calls?: ToolCallDelta[];
}

@ApiSchema({ name: 'ChatCompletionResponseStreamChoice' })
export class ChatChunkChoiceDto implements ChatChunkChoice {
  @ApiProperty({ type: 'integer', description: 'Choice index.' })
  index!: number;
  @ApiProperty({ type: () => DeltaMessageDto, description: 'What this chunk adds to the message.' })
  delta!: DeltaMessageDto;
  @ApiProperty({ type: () => ChatLogprobsDto, nullable: true, description: 'With logprobs: the new tokens and their logprobs.' })
  logprobs!: ChatLogprobsDto | null;
  @ApiProperty({ type: 'string', nullable: true, enum: [...FINISH_REASONS, null], description: 'Why generation ended; null until the choice\'s last chunk.' })
  finish_reason!: string | null;
  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'integer' }], nullable: true, required: false, description: 'On the last chunk: the stop string or token id that ended the choice.' })
  stop_reason?: string | number | null;
  @ApiProperty({ type: 'integer', isArray: true, required: false, description: 'With return_token_ids: the new token ids.' })
  token_ids?: number[];
}

/** One `data:` frame of a streamed chat completion. */
@ApiSchema({ name: 'ChatCompletionStreamResponse' })
export class ChatStreamResponseDto extends ChatObjectDto implements Omit<ChatChunk, 'usage'> {
  @ApiProperty({ enum: ['chat.completion.chunk'], description: 'Always chat.completion.chunk.' })
  object!: 'chat.completion.chunk';
  @ApiProperty({ type: () => ChatChunkChoiceDto, isArray: true, description: 'Usually one choice; none on the final usage chunk.' })
  choices!: ChatChunkChoiceDto[];
  @ApiProperty(STREAM_CHUNK_USAGE)
  usage?: UsageDto | null;
  @ApiProperty({ type: 'integer', isArray: true, required: false, description: 'With return_token_ids: the prompt token ids (first chunk only).' })
  prompt_token_ids?: number[];
  @ApiProperty({ required: false, description: 'With return_prompt_text: the rendered prompt (first chunk only).' })
  prompt_text?: string;
}
