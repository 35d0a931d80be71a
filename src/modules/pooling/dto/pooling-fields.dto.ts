// Request fields every pooling route shares (vLLM's PoolingBasicRequestMixin, the completion
// and chat input forms, and the encoding / embedding options), composed by each route's DTO.

import type { PoolingInputFields } from '../../../serving/pooling/pooling-input';
import type { EmbedDtype, EncodingFormat, Endianness } from '../../../serving/pooling/pooled-vectors';
import type { PoolingRequestCommon } from '../../../serving/pooling/pooling-serving-base';
import { AnyField, BoolField, EnumField, IntField, JsonListField, ObjectField, PromptField, StringField } from '../../../common/dto/api-field';

export class PoolingCommonFieldsDto implements PoolingRequestCommon {
  [key: string]: unknown;

  @StringField({ description: 'Served model name; omitted = the served model.' })
  model?: string | null;

  @StringField({ description: "OpenAI's end-user id; accepted and not used." })
  user?: string | null;

  @IntField({ description: 'Keep only this many tokens of each input (-1 = max_model_len).' })
  truncate_prompt_tokens?: number | null;

  @EnumField(['left', 'right'], { description: "With truncate_prompt_tokens: 'left' keeps the last N tokens (default), 'right' the first N." })
  truncation_side?: 'left' | 'right' | null;

  @StringField({ description: 'Base of the response id (the X-Request-Id header wins).' })
  request_id?: string | null;

  @IntField({ description: 'Scheduling priority (lower first); needs --scheduling-policy priority when non-zero.', default: 0 })
  priority?: number | null;

  @StringField({ description: 'Checked as vLLM does; pooling keeps no cache, so nothing is shared between requests anyway.' })
  cache_salt?: string | null;

  @AnyField({ description: 'Not supported (no multimodal models): answered with 400.' })
  mm_processor_kwargs?: unknown;
}

/** `input` (completion form) or `messages` (chat form), exactly one. */
export class PoolingInputFieldsDto extends PoolingCommonFieldsDto implements PoolingInputFields {
  @PromptField({ description: 'Text(s) or token ids to pool: a string, strings, token ids or lists of token ids.', example: 'The quick brown fox' })
  input?: string | string[] | number[] | number[][];

  @JsonListField({ description: 'Chat form instead of input: the conversation, rendered with the chat template.' })
  messages?: unknown[] | null;

  @BoolField({ description: 'Add special tokens ([CLS]/[SEP], BOS). Default true for input, false for messages.' })
  add_special_tokens?: boolean | null;

  @BoolField({ description: 'Chat form: add the generation prompt.', default: false })
  add_generation_prompt?: boolean | null;

  @BoolField({ description: 'Chat form: leave the final message open.', default: false })
  continue_final_message?: boolean | null;

  @StringField({ description: 'Chat form: a per-request template (needs --trust-request-chat-template).' })
  chat_template?: string | null;

  @ObjectField({ description: 'Chat form: extra template variables.' })
  chat_template_kwargs?: Record<string, unknown> | null;
}

/** Fields of the routes that return vectors (/v1/embeddings, /pooling). */
export class VectorFieldsDto {
  @EnumField(['float', 'base64'], { description: 'Vectors as lists of floats, or base64 of their raw bytes (embed_dtype, endianness).', default: 'float' })
  encoding_format?: EncodingFormat | null;

  @EnumField(['float32', 'float16', 'bfloat16'], { description: 'Element type of base64 output.', default: 'float32' })
  embed_dtype?: EmbedDtype | null;

  @EnumField(['native', 'little', 'big'], { description: 'Byte order of base64 output.', default: 'native' })
  endianness?: Endianness | null;

  @IntField({ description: 'Matryoshka: keep the first N dimensions, then normalise (400 unless the model declares support).' })
  dimensions?: number | null;

  @BoolField({ description: 'L2-normalise each embedding (default: --pooler-config normalize, true).' })
  normalize?: boolean | null;

  @BoolField({ description: "Apply the pooler's activation: normalisation for embeddings, the classifier's softmax/sigmoid for classifiers.", default: true })
  use_activation?: boolean | null;
}

/** use_activation and its legacy spellings (classifiers and scores). */
export class ActivationFieldsDto {
  @BoolField({ description: "Apply the classifier's activation (softmax, or sigmoid for one label) to the logits.", default: true })
  use_activation?: boolean | null;

  @BoolField({ description: 'Deprecated spelling of use_activation.' })
  activation?: boolean | null;

  @BoolField({ description: 'Deprecated spelling of use_activation.' })
  softmax?: boolean | null;
}
