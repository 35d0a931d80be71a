// The response object, stream event, input-item list and deletion answer of /v1/responses, for
// the OpenAPI spec. Schema names are vLLM's / OpenAI's; classes implement the serving layer's
// types so the documented shape cannot drift from what is sent.

import { ApiProperty, ApiPropertyOptional, ApiSchema, type ApiPropertyOptions } from '@nestjs/swagger';
import type { InputItemList } from '../../../serving/responses/responses-serving';
import type { InputItem, OutputItem, ResponseObject, ResponseStatus, ResponseUsage } from '../../../serving/responses/protocol';

const STATUSES = ['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'];

const OUTPUT_ITEM_SCHEMA = {
  type: 'object',
  description: "A 'message' (content: output_text parts with annotations and logprobs), a 'function_call' (call_id, name, arguments) or a 'reasoning' item.",
  properties: {
    id: { type: 'string', description: 'Item id: msg_…, fc_… or rs_….' },
    type: { type: 'string', enum: ['message', 'function_call', 'reasoning'], description: 'The kind of item.' },
    status: { type: 'string', enum: ['in_progress', 'completed', 'incomplete'], description: 'Whether the item is complete (incomplete: cut by max_output_tokens).' },
  },
  additionalProperties: true,
};

const ANY_ITEM_SCHEMA = { type: 'object', additionalProperties: true, description: 'An item (message, function_call, function_call_output or reasoning).' };

@ApiSchema({ name: 'ResponseUsage' })
export class ResponseUsageDto implements ResponseUsage {
  @ApiProperty({ type: 'integer', description: 'Prompt tokens (the rendered conversation).' }) input_tokens!: number;
  @ApiProperty({
    type: 'object',
    description: 'Prompt token details.',
    properties: { cached_tokens: { type: 'integer', description: 'Prompt tokens served from the prefix cache.' } },
  })
  input_tokens_details!: { cached_tokens: number };
  @ApiProperty({ type: 'integer', description: 'Generated tokens.' }) output_tokens!: number;
  @ApiProperty({
    type: 'object',
    description: 'Output token details.',
    properties: { reasoning_tokens: { type: 'integer', description: 'Generated tokens of reasoning items.' } },
  })
  output_tokens_details!: { reasoning_tokens: number };
  @ApiProperty({ type: 'integer', description: 'input_tokens + output_tokens.' }) total_tokens!: number;
}

@ApiSchema({ name: 'ResponsesResponse' })
export class ResponsesResponseDto implements ResponseObject {
  @ApiProperty({ example: 'resp_0123456789abcdef0123456789abcdef', description: 'The response id: resp_<X-Request-Id or random>, or the request_id as sent.' }) id!: string;
  @ApiProperty({ enum: ['response'], description: 'Always "response".' }) object!: 'response';
  @ApiProperty({ type: 'integer', description: 'Creation time (seconds since the epoch).' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Completion time, once completed.' }) completed_at!: number | null;
  @ApiProperty({ enum: STATUSES, description: 'Where the response stands.' }) status!: ResponseStatus;
  @ApiProperty({ description: 'Whether it runs in the background.' }) background!: boolean;
  @ApiProperty({
    type: 'object',
    nullable: true,
    description: 'Why it failed (status failed).',
    properties: { code: { type: 'string', description: 'Error code (server_error).' }, message: { type: 'string', description: 'What went wrong.' } },
  })
  error!: { code: string; message: string } | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    description: 'Why it is incomplete.',
    properties: { reason: { type: 'string', enum: ['max_output_tokens'], description: 'max_output_tokens cut the output.' } },
  })
  incomplete_details!: { reason: 'max_output_tokens' } | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'The request\'s instructions.' }) instructions!: string | null;
  @ApiProperty({ type: 'integer', description: 'Most output tokens (resolved against the context).' }) max_output_tokens!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Echoed.' }) max_tool_calls!: number | null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: { type: 'string' }, description: 'Echoed metadata.' }) metadata!: Record<string, string> | null;
  @ApiProperty({ description: 'The served model name.' }) model!: string;
  @ApiProperty({ type: 'array', items: OUTPUT_ITEM_SCHEMA, description: 'The output items.' }) output!: OutputItem[];
  @ApiProperty({ description: 'Echoed (default true).' }) parallel_tool_calls!: boolean;
  @ApiProperty({ type: 'string', nullable: true, description: 'The response this one continues.' }) previous_response_id!: string | null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: 'Always null (prompt templates are not supported).' }) prompt!: null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: 'Echoed reasoning options.' }) reasoning!: ResponseObject['reasoning'];
  @ApiProperty({ description: 'Echoed (default auto).' }) service_tier!: string;
  @ApiProperty({ description: 'Whether it is stored.' }) store!: boolean;
  @ApiProperty({ description: 'Sampling temperature used.' }) temperature!: number;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Text options (format).' }) text!: ResponseObject['text'];
  @ApiProperty({
    description: "'auto', 'none', 'required' or a named function.",
    oneOf: [{ type: 'string', enum: ['auto', 'none', 'required'] }, { type: 'object', additionalProperties: true }],
  })
  tool_choice!: unknown;
  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: true }, description: 'Echoed tools.' }) tools!: unknown[];
  @ApiProperty({ type: 'integer', description: 'Alternatives per output token with logprobs.' }) top_logprobs!: number;
  @ApiProperty({ description: 'Nucleus sampling threshold used.' }) top_p!: number;
  @ApiProperty({ enum: ['auto', 'disabled'], description: 'Echoed truncation.' }) truncation!: 'auto' | 'disabled';
  @ApiProperty({ type: () => ResponseUsageDto, nullable: true, description: 'Token counts, once finished.' }) usage!: ResponseUsageDto | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'Echoed end-user id.' }) user!: string | null;
  @ApiProperty({ required: false, nullable: true, type: 'array', items: { type: 'object', additionalProperties: true }, description: 'vLLM, with enable_response_messages: the prompt text and its token ids.' })
  input_messages?: ResponseObject['input_messages'];
  @ApiProperty({ required: false, nullable: true, type: 'array', items: { type: 'object', additionalProperties: true }, description: 'vLLM, with enable_response_messages: the output text and its token ids.' })
  output_messages?: ResponseObject['output_messages'];
  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true, description: 'The params a decode replica pulls the KV of this prefill with (--kv-transfer-config and do_remote_decode).' })
  kv_transfer_params?: Record<string, unknown> | null;
}

/** One `data:` frame of the typed stream; its `type` is also the frame's `event:` line. */
@ApiSchema({ name: 'ResponsesStreamEvent' })
export class ResponsesStreamEventDto {
  @ApiProperty({
    description: 'The event type (also the `event:` line).',
    enum: [
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.reasoning_text.delta', 'response.reasoning_text.done', 'response.function_call_arguments.delta',
      'response.function_call_arguments.done', 'response.completed', 'response.incomplete', 'response.failed',
    ],
  })
  type!: string;
  @ApiProperty({ type: 'integer', description: 'Position in the stream, from 0.' }) sequence_number!: number;
  @ApiProperty({ type: () => ResponsesResponseDto, required: false, description: 'response.created / in_progress / completed / incomplete / failed: the response.' })
  response?: ResponsesResponseDto;
  @ApiProperty({ type: 'integer', required: false, description: 'Index of the output item.' }) output_index?: number;
  @ApiProperty({ required: false, description: 'Id of the output item.' }) item_id?: string;
  @ApiProperty({ type: 'integer', required: false, description: 'Index of the content part.' }) content_index?: number;
  @ApiProperty({ ...OUTPUT_ITEM_SCHEMA, required: false, description: 'output_item.added / done: the item.' } as ApiPropertyOptions) item?: OutputItem;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'content_part.added / done: the part.' }) part?: unknown;
  @ApiProperty({ required: false, description: '….delta: the new text or arguments.' }) delta?: string;
  @ApiProperty({ required: false, description: 'output_text.done / reasoning_text.done: the whole text.' }) text?: string;
  @ApiProperty({ required: false, description: 'function_call_arguments.done: the whole arguments JSON.' }) arguments?: string;
  @ApiProperty({ required: false, description: 'function_call_arguments.done: the function name.' }) name?: string;
  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: true }, required: false, description: 'output_text events: logprobs of the text (with include).' })
  logprobs?: unknown[];
}

@ApiSchema({ name: 'ResponseItemList' })
export class InputItemListDto implements InputItemList {
  @ApiProperty({ enum: ['list'], description: 'Always "list".' }) object!: 'list';
  @ApiProperty({ type: 'array', items: ANY_ITEM_SCHEMA, description: 'The input items of this page.' }) data!: InputItem[];
  @ApiProperty({ type: 'string', nullable: true, description: 'Id of the first item of the page.' }) first_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'Id of the last item of the page.' }) last_id!: string | null;
  @ApiProperty({ description: 'Whether more items follow.' }) has_more!: boolean;
}

@ApiSchema({ name: 'ResponseDeleted' })
export class DeletedResponseDto {
  @ApiProperty({ description: 'The deleted response\'s id.' }) id!: string;
  @ApiProperty({ enum: ['response'], description: 'Always "response".' }) object!: 'response';
  @ApiProperty({ description: 'Always true.' }) deleted!: boolean;
}
