// POST /v1/chat/completions body (and the batch variant): OpenAI's ChatCompletionRequest plus
// vLLM's extras. Message contents and tools are checked by the serving layer (text parts only for now).

import { ApiSchema } from '@nestjs/swagger';
import type { ChatRequestBody } from '../../../serving/chat-serving';
import { AnyField, BoolField, EnumField, IntField, JsonListField, ObjectField, StringField } from '../../../common/dto/api-field';
import { SamplingFieldsDto } from '../../../common/dto/sampling-fields.dto';
import { REASONING_EFFORTS, TOOL_CALL_SCHEMA, TOOL_CHOICE_SCHEMA, TOOL_SCHEMA } from '../../../common/dto/tool-fields';

const MESSAGE_SCHEMA = {
  type: 'object',
  properties: {
    role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'], description: 'Who speaks.' },
    content: {
      oneOf: [
        { type: 'string' },
        {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              type: { type: 'string', enum: ['text'], description: 'The part\'s kind (text only for now).' },
              text: { type: 'string', description: 'The text.' },
            },
          },
        },
      ],
      nullable: true,
      description: 'The message text, or a list of text parts.',
    },
    name: { type: 'string', description: 'The speaker\'s name, passed to the chat template.' },
    tool_call_id: { type: 'string', description: 'The tool call a tool message answers.' },
    tool_calls: { type: 'array', items: TOOL_CALL_SCHEMA, description: 'assistant messages: the calls it made.' },
    reasoning: { type: 'string', description: 'assistant messages: their thinking (`reasoning_content` is accepted too).' },
  },
  required: ['role'],
  additionalProperties: true,
};

/** Every chat field except `messages`, whose shape differs between single and batch. */
class ChatFieldsDto extends SamplingFieldsDto {
  [key: string]: unknown;

  @IntField({ description: 'Most tokens to generate (OpenAI\'s newer name; wins over max_tokens). Default: up to the context limit.' })
  max_completion_tokens?: number | null;

  @BoolField({ description: 'Return logprobs of the output tokens.', default: false })
  logprobs?: boolean | null;

  @IntField({ description: 'Top alternatives per output token (0-20); needs logprobs.', default: 0 })
  top_logprobs?: number | null;

  @BoolField({ description: 'Prepend the last message\'s content when it has the response role.', default: false })
  echo?: boolean | null;

  @BoolField({ description: 'Add the template\'s generation prompt.', default: true })
  add_generation_prompt?: boolean | null;

  @BoolField({ description: 'Leave the final message open so the model continues it (needs add_generation_prompt false).', default: false })
  continue_final_message?: boolean | null;

  @BoolField({ description: 'Add special tokens on top of what the chat template writes.', default: false })
  add_special_tokens?: boolean | null;

  @JsonListField({ description: 'Documents for RAG templates (dicts with "title" and "text").' }, { type: 'object', additionalProperties: { type: 'string' } })
  documents?: Array<Record<string, string>> | null;

  @StringField({ description: 'A Jinja chat template for this request (needs --trust-request-chat-template).' })
  chat_template?: string | null;

  @ObjectField({ description: 'Extra variables for the chat template.' })
  chat_template_kwargs?: Record<string, unknown> | null;

  @BoolField({ description: 'Return the prompt text the chat template produced (`prompt_text`).' })
  return_prompt_text?: boolean | null;

  @ObjectField({ description: "Overrides for the model's multimodal processor, over --mm-processor-kwargs (a text-only model has none to apply)." })
  mm_processor_kwargs?: Record<string, unknown> | null;

  @ObjectField({ description: 'Media loading options keyed by modality, over --media-io-kwargs: {"image": {"rgba_background_color": [r, g, b]}}.' })
  media_io_kwargs?: Record<string, Record<string, unknown>> | null;

  @BoolField({ description: 'Allow more than one tool call per answer; false keeps only the first.', default: true })
  parallel_tool_calls?: boolean | null;

  @JsonListField({ description: 'Function tools the model may call; the chat template renders them. An empty list is a 400.' }, TOOL_SCHEMA)
  tools?: unknown[] | null;

  @AnyField(
    {
      description: '"none" (no calls), "auto" (the model decides; needs --enable-auto-tool-choice and --tool-call-parser), ' +
        '"required" or {"type": "function", "function": {"name": ...}} (forced by constrained decoding). ' +
        'Default: "auto" with tools, "none" without.',
    },
    TOOL_CHOICE_SCHEMA,
  )
  tool_choice?: unknown;

  @EnumField(REASONING_EFFORTS, {
    description: 'Passed to the chat template as `reasoning_effort`; also sets `enable_thinking` (false for "none") unless chat_template_kwargs does.',
  })
  reasoning_effort?: string | null;

  @BoolField({ description: 'With --reasoning-parser: false leaves `reasoning` out of the answer.', default: true })
  include_reasoning?: boolean | null;
}

@ApiSchema({ name: 'ChatCompletionRequest' })
export class ChatRequestDto extends ChatFieldsDto implements ChatRequestBody {
  @JsonListField({ description: 'The conversation.', required: true, example: [{ role: 'user', content: 'Hello!' }] }, MESSAGE_SCHEMA)
  messages!: unknown[];
}

@ApiSchema({ name: 'BatchChatCompletionRequest' })
export class BatchChatRequestDto extends ChatFieldsDto implements ChatRequestBody {
  @JsonListField(
    { description: 'Conversations: one list of messages each; one choice per conversation.', required: true },
    { type: 'array', items: MESSAGE_SCHEMA },
  )
  messages!: unknown[][];
}
