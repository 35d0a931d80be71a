// Response shapes shared by completions and chat, for the OpenAPI spec. Classes `implement`
// the serving layer's interfaces so the documented shape cannot drift from what is sent.

import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';
import type { ChatLogprobEntry, ChatLogprobs, ChatTopLogprob, CompletionLogprobs } from '../../serving/logprobs';
import type { CompletionTokensDetails, PromptTokensDetails, UsageInfo } from '../../serving/usage';

export class PromptTokensDetailsDto implements PromptTokensDetails {
  @ApiProperty({ type: 'integer', description: 'Prompt tokens served from the prefix cache.' })
  cached_tokens!: number;
}

export class CompletionTokensDetailsDto implements CompletionTokensDetails {
  @ApiProperty({ type: 'integer', description: 'Output tokens of the thinking section.' })
  reasoning_tokens!: number;
}

export class UsageDto implements UsageInfo {
  @ApiProperty({ type: 'integer' }) prompt_tokens!: number;
  @ApiProperty({ type: 'integer' }) completion_tokens!: number;
  @ApiProperty({ type: 'integer' }) total_tokens!: number;
  @ApiProperty({ type: () => PromptTokensDetailsDto, nullable: true, description: 'With --enable-prompt-tokens-details.' })
  prompt_tokens_details!: PromptTokensDetailsDto | null;
  @ApiProperty({ type: () => CompletionTokensDetailsDto, required: false, description: 'Chat with --reasoning-parser.' })
  completion_tokens_details?: CompletionTokensDetailsDto | null;
}

export class CompletionLogprobsDto implements CompletionLogprobs {
  @ApiProperty({ type: 'integer', isArray: true, description: 'Character offset of each token in the choice text.' })
  text_offset!: number[];
  @ApiProperty({ type: 'number', isArray: true, nullable: true, description: 'Logprob of each token (null for the first echoed prompt token).' })
  token_logprobs!: (number | null)[];
  @ApiProperty({ type: 'string', isArray: true, description: 'Each token\'s text, or "token_id:N".' })
  tokens!: string[];
  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: { type: 'number' }, nullable: true }, description: 'Per token: {token: logprob} for the sampled and top tokens.' })
  top_logprobs!: (Record<string, number> | null)[];
}

export class ChatTopLogprobDto implements ChatTopLogprob {
  @ApiProperty() token!: string;
  @ApiProperty() logprob!: number;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, description: 'UTF-8 bytes of the token.' })
  bytes!: number[] | null;
}

export class ChatLogprobEntryDto extends ChatTopLogprobDto implements ChatLogprobEntry {
  @ApiProperty({ type: () => ChatTopLogprobDto, isArray: true }) top_logprobs!: ChatTopLogprobDto[];
}

export class ChatLogprobsDto implements ChatLogprobs {
  @ApiProperty({ type: () => ChatLogprobEntryDto, isArray: true, nullable: true }) content!: ChatLogprobEntryDto[] | null;
}

/** vLLM's prompt_logprobs: per prompt position (first null) {token_id: {logprob, rank, decoded_token}}. */
export const PROMPT_LOGPROBS_SCHEMA = {
  type: 'array',
  nullable: true,
  items: {
    type: 'object',
    nullable: true,
    additionalProperties: {
      type: 'object',
      properties: { logprob: { type: 'number' }, rank: { type: 'integer' }, decoded_token: { type: 'string' } },
    },
  },
} as ApiPropertyOptions;
