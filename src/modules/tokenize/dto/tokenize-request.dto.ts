// POST /tokenize (completion form: prompt; chat form: messages) and POST /detokenize bodies.

import type { DetokenizeRequestBody, TokenizeRequestBody } from '../../../serving/tokenize-serving';
import { BoolField, IntListField, JsonListField, ObjectField, StringField } from '../../../common/dto/api-field';
import { TOOL_SCHEMA } from '../../../common/dto/tool-fields';

export class TokenizeRequestDto implements TokenizeRequestBody {
  [key: string]: unknown;

  @StringField({ description: 'Served model name; omitted = the served model.' })
  model?: string | null;

  @StringField({ description: 'Completion form: the text to tokenize.', example: 'Once upon a time' })
  prompt?: string | null;

  @JsonListField({ description: 'Chat form: the conversation, rendered with the chat template first.' })
  messages?: unknown[] | null;

  @BoolField({ description: 'Add special tokens (default true for prompt, false for messages).' })
  add_special_tokens?: boolean | null;

  @BoolField({ description: 'Chat form: add the generation prompt.', default: true })
  add_generation_prompt?: boolean | null;

  @BoolField({ description: 'Chat form: leave the final message open.', default: false })
  continue_final_message?: boolean | null;

  @StringField({ description: 'Chat form: a per-request template (needs --trust-request-chat-template).' })
  chat_template?: string | null;

  @ObjectField({ description: 'Chat form: extra template variables.' })
  chat_template_kwargs?: Record<string, unknown> | null;

  @BoolField({ description: 'Also return each token\'s vocabulary string.', default: false })
  return_token_strs?: boolean | null;

  @JsonListField({ description: 'Chat form: tool definitions the chat template renders.' }, TOOL_SCHEMA)
  tools?: unknown[] | null;
}

export class DetokenizeRequestDto implements DetokenizeRequestBody {
  @StringField({ description: 'Served model name; omitted = the served model.' })
  model?: string | null;

  @IntListField({ description: 'Token ids to turn back into text.', required: true, example: [403, 1050] })
  tokens!: number[];
}
