// /v1/completions/derender and /v1/chat/completions/derender bodies. Each route takes two forms,
// told apart by `stream` (vLLM's union): the whole generate response(s), or one stream chunk
// plus the client-carried stream_state.

import { BoolField, Check, IntField, IntListField, JsonListField, NestedField, ObjectField, StringField, StringListField } from '../../../common/dto/api-field';
import { GenerateResponseDto, GenerateStreamResponseDto } from '../../tokens-generate/dto/generate-response.dto';

const isTrue = (v: unknown): boolean => v === true;
const isNotTrue = (v: unknown): boolean => v === undefined || v === null || v === false;

/** Streaming derender state, carried by the client from one call to the next. */
export class DerenderStreamStateDto {
  @StringListField({ description: 'Trailing decode window of token strings (unused by ortllm, kept for vLLM clients; at most 1024).' })
  prev_tokens?: string[] | null;

  @IntField({ description: 'Prefix offset into prev_tokens.', default: 0 })
  prefix_offset?: number | null;

  @IntField({ description: 'Read offset into prev_tokens.', default: 0 })
  read_offset?: number | null;

  @BoolField({ description: 'True once the assistant role delta was sent (chat).', default: false })
  role_sent?: boolean | null;

  @IntListField({ description: 'Trailing sampled token ids (at most 4).' })
  logprob_context_token_ids?: number[] | null;

  @IntField({ description: 'Text emitted so far (characters): where the next chunk\'s text and text_offset start.', default: 0 })
  logprob_text_offset?: number | null;

  @IntListField({ description: 'Every output token id seen so far (replayed through the detokenizer on each call).' })
  output_token_ids?: number[] | null;

  @IntListField({ description: 'Token count of each chunk in output_token_ids; must sum to its length.' })
  output_chunk_lens?: number[] | null;

  @BoolField({ description: 'True once a tool call delta was sent (no tool parsers here: always false).', default: false })
  tools_streamed?: boolean | null;

  @StringListField({ description: 'Tool call ids by index (no tool parsers here: always empty).' })
  last_tool_call_ids?: string[] | null;
}

class DerenderBaseDto {
  @StringField({ description: 'Served model name; omitted means the default model.' })
  model?: string | null;
}

/** The whole-response form: `stream` false or absent. */
class DerenderWholeBaseDto extends DerenderBaseDto {
  @BoolField({ description: 'false (or absent): derender whole responses.', default: false })
  @Check('isNotTrue', isNotTrue, 'stream must be false for this form')
  stream?: false | null;
}

/** The one-chunk form: `stream` true, a generate stream chunk and the carried state. */
class DerenderStreamBaseDto extends DerenderBaseDto {
  @BoolField({ description: 'true: derender one stream chunk.', required: true })
  @Check('isTrue', isTrue, 'stream must be true for this form')
  stream!: true;

  @NestedField(() => GenerateStreamResponseDto, { required: true, description: 'One output_mode "tokens" SSE chunk of /inference/v1/generate.' })
  generate_chunk!: GenerateStreamResponseDto;

  @NestedField(() => DerenderStreamStateDto, { description: 'The stream_state of the previous call; null on the first.' })
  stream_state?: DerenderStreamStateDto | null;

  @IntField({ description: 'Prompt token count (usage).' })
  prompt_tokens?: number | null;

  @IntListField({ description: 'Prompt token ids: seed the detokenizer on the first chunk.' })
  prompt_token_ids?: number[] | null;
}

export class DerenderCompletionRequestDto extends DerenderWholeBaseDto {
  @NestedField(() => GenerateResponseDto, { isArray: true, required: true, description: 'One output_mode "tokens" generate response per prompt, in render\'s order.' })
  generate_responses!: GenerateResponseDto[];

  @IntListField({ description: 'Prompt token count per response (usage); each defaults to 0.' })
  prompt_tokens?: number[] | null;

  @JsonListField({ description: 'Prompt token ids per response (null entries allowed): seed the detokenizer.' }, { type: 'array', items: { type: 'integer' }, nullable: true })
  prompt_token_ids?: (number[] | null)[] | null;

  @ObjectField({ description: 'The original completion request from /render (stop, skip_special_tokens, logprobs, …).' })
  completion_request?: Record<string, unknown> | null;
}

export class DerenderCompletionStreamRequestDto extends DerenderStreamBaseDto {
  @ObjectField({ description: 'The original completion request from /render.' })
  completion_request?: Record<string, unknown> | null;
}

export class DerenderChatRequestDto extends DerenderWholeBaseDto {
  @NestedField(() => GenerateResponseDto, { required: true, description: 'The output_mode "tokens" generate response.' })
  generate_response!: GenerateResponseDto;

  @IntField({ description: 'Prompt token count (usage); defaults to 0.' })
  prompt_tokens?: number | null;

  @IntListField({ description: 'Prompt token ids: seed the detokenizer.' })
  prompt_token_ids?: number[] | null;

  @ObjectField({ description: 'The original chat request from /render (logprobs, top_logprobs, stop, …).' })
  chat_request?: Record<string, unknown> | null;
}

export class DerenderChatStreamRequestDto extends DerenderStreamBaseDto {
  @ObjectField({ description: 'The original chat request from /render.' })
  chat_request?: Record<string, unknown> | null;
}
