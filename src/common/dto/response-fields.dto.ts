// Response shapes shared by completions, chat and generate, for the OpenAPI spec (and, for
// UsageInfo, validated input of /derender, which takes a generate response back). Classes
// `implement` the serving layer's interfaces where they can, so the documented shape cannot
// drift from what is sent. @ApiSchema names are vLLM's protocol names.

import { ApiProperty, ApiSchema, type ApiPropertyOptions } from '@nestjs/swagger';
import type { ChatLogprobEntry, ChatLogprobs, ChatTopLogprob, CompletionLogprobs } from '../../serving/logprobs';
import { IntField, NestedField } from './api-field';

@ApiSchema({ name: 'PromptTokenUsageInfo' })
export class PromptTokensDetailsDto {
  @IntField({ description: 'Prompt tokens served from the prefix cache.' })
  cached_tokens?: number | null;
}

@ApiSchema({ name: 'CompletionTokenUsageInfo' })
export class CompletionTokensDetailsDto {
  @IntField({ required: true, description: 'Output tokens of the thinking section.' })
  reasoning_tokens!: number;
}

/**
 * vLLM's UsageInfo, whose counts other than prompt_tokens are optional: /derender accepts
 * generate responses that leave them out. (Responses always carry all four; the response DTOs
 * therefore implement their serving interface without `usage`.)
 */
@ApiSchema({ name: 'UsageInfo' })
export class UsageDto {
  @IntField({ required: true, description: 'Tokens in the prompt(s).' })
  prompt_tokens!: number;

  @IntField({ description: 'Generated tokens (all choices).' })
  completion_tokens?: number | null;

  @IntField({ description: 'prompt_tokens + completion_tokens.' })
  total_tokens?: number | null;

  @NestedField(() => PromptTokensDetailsDto, { description: '{cached_tokens}: with --enable-prompt-tokens-details, else null.' })
  prompt_tokens_details?: PromptTokensDetailsDto | null;

  @NestedField(() => CompletionTokensDetailsDto, { description: '{reasoning_tokens}: chat with --reasoning-parser (not on per-chunk usage).' })
  completion_tokens_details?: CompletionTokensDetailsDto | null;
}

/** `usage` of a stream chunk (completions and chat). */
export const STREAM_CHUNK_USAGE: ApiPropertyOptions = {
  type: () => UsageDto,
  nullable: true,
  required: false,
  description: 'With stream_options.include_usage: on the last chunk (which has no choices); with continuous_usage_stats: on every chunk.',
};

@ApiSchema({ name: 'CompletionLogProbs' })
export class CompletionLogprobsDto implements CompletionLogprobs {
  @ApiProperty({ type: 'integer', isArray: true, description: 'Character offset of each token in the choice text.' })
  text_offset!: number[];
  @ApiProperty({ type: 'number', isArray: true, nullable: true, description: 'Logprob of each token (null for the first echoed prompt token).' })
  token_logprobs!: (number | null)[];
  @ApiProperty({ type: 'string', isArray: true, description: 'Each token\'s text, or "token_id:N".' })
  tokens!: string[];
  @ApiProperty({
    type: 'array',
    items: { type: 'object', additionalProperties: { type: 'number' }, nullable: true },
    description: 'Per token: {token: logprob} for the sampled and top tokens.',
  })
  top_logprobs!: (Record<string, number> | null)[];
}

@ApiSchema({ name: 'ChatCompletionLogProb' })
export class ChatTopLogprobDto implements ChatTopLogprob {
  @ApiProperty({ description: 'The token\'s text, or "token_id:N".' }) token!: string;
  @ApiProperty({ description: 'Its log probability (-9999.0 for -inf).' }) logprob!: number;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, description: 'UTF-8 bytes of the token.' })
  bytes!: number[] | null;
}

@ApiSchema({ name: 'ChatCompletionLogProbsContent' })
export class ChatLogprobEntryDto extends ChatTopLogprobDto implements ChatLogprobEntry {
  @ApiProperty({ type: () => ChatTopLogprobDto, isArray: true, description: 'The most likely tokens at this position (top_logprobs of them).' })
  top_logprobs!: ChatTopLogprobDto[];
}

@ApiSchema({ name: 'ChatCompletionLogProbs' })
export class ChatLogprobsDto implements ChatLogprobs {
  @ApiProperty({ type: () => ChatLogprobEntryDto, isArray: true, nullable: true, description: 'One entry per generated token.' })
  content!: ChatLogprobEntryDto[] | null;
}

/** vLLM's prompt_logprobs: per prompt position (first null) {token_id: {logprob, rank, decoded_token}}. */
export const PROMPT_LOGPROBS_SCHEMA = {
  type: 'array',
  nullable: true,
  description: 'With prompt_logprobs: per prompt position (the first is null) {token_id: {logprob, rank, decoded_token}}.',
  items: {
    type: 'object',
    nullable: true,
    additionalProperties: {
      type: 'object',
      properties: {
        logprob: { type: 'number', description: 'Log probability of the token at this position.' },
        rank: { type: 'integer', description: '1-based rank in the distribution.' },
        decoded_token: { type: 'string', description: 'The token\'s text.' },
      },
    },
  },
} as ApiPropertyOptions;

/** The envelope of vLLM's pooling responses (embeddings, pooling, classify, score): a list object. */
export class PoolingListFieldsDto {
  @ApiProperty({ enum: ['list'], description: 'Always list.' })
  object!: 'list';
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' })
  created!: number;
  @ApiProperty({ description: 'The served model name.' })
  model!: string;
}
