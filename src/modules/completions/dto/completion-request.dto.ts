// POST /v1/completions body: OpenAI's CompletionRequest plus vLLM's extras.

import type { CompletionRequestBody } from '../../../serving/completion-serving';
import { AnyField, BoolField, IntField, PromptField, StringField } from '../../../common/dto/api-field';
import { SamplingFieldsDto } from '../../../common/dto/sampling-fields.dto';

export class CompletionRequestDto extends SamplingFieldsDto implements CompletionRequestBody {
  [key: string]: unknown;

  @PromptField({ description: 'The prompt(s): a string, strings, token ids or lists of token ids.', example: 'Once upon a time' })
  prompt?: string | string[] | number[] | number[][];

  @IntField({ description: 'Candidates generated per prompt; the best n are returned (>= n).' })
  best_of?: number | null;

  @BoolField({ description: 'Prepend the prompt to each choice\'s text (and its logprobs).', default: false })
  echo?: boolean | null;

  @IntField({ description: 'Top logprobs per output token (0-20); tokens/token_logprobs/top_logprobs/text_offset.' })
  logprobs?: number | null;

  @StringField({ description: 'Not supported (as in vLLM): answered with 400.' })
  suffix?: string | null;

  @BoolField({ description: 'Add special tokens (e.g. BOS) to text prompts.', default: true })
  add_special_tokens?: boolean | null;

  @AnyField({ description: 'Not supported yet: answered with 400.' })
  prompt_embeds?: unknown;
}
