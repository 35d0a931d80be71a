// POST /inference/v1/generate body (vLLM's GenerateRequest). Unknown fields are ignored, as
// vLLM's extra="allow" models do. `sampling_params` is the engine struct; its fields are
// normalised and range-checked by the engine's own rules (src/engine/sampling-params.ts).

import { Length } from 'class-validator';
import { BoolField, EnumField, IntField, JsonListField, NestedField, ObjectField, StringField } from '../../../common/dto/api-field';
import { StreamOptionsDto } from '../../../common/dto/sampling-fields.dto';
import { OUTPUT_MODES, type GenerateRequest, type OutputMode } from '../../../serving/generate/generate-types';
import { TokenIdsField } from './fields';

export class GenerateRequestDto implements GenerateRequest {
  @StringField({
    description:
      'Base of the request id. The server id is `generate-tokens-` + the X-Request-Id header if sent, else this, else a random uuid.',
  })
  request_id?: string | null;

  @TokenIdsField({ required: true, description: 'Prompt token ids (at least one, none negative).', example: [1, 403, 1050] })
  token_ids!: number[];

  @ObjectField({
    required: true,
    description:
      "vLLM's engine SamplingParams (snake_case: n, temperature, top_p, top_k, min_p, seed, max_tokens, min_tokens, stop, " +
      'stop_token_ids, ignore_eos, logprobs, prompt_logprobs, detokenize, skip_special_tokens, ' +
      'spaces_between_special_tokens, include_stop_str_in_output, logit_bias, allowed_token_ids, …). ' +
      'max_tokens absent means up to the context limit. structured_outputs constrains the output: exactly one of ' +
      'json (schema), regex, choice, grammar, json_object, structural_tag, plus disable_any_whitespace and ' +
      'disable_additional_properties (guided_decoding is read as its old name).',
    example: { max_tokens: 16, temperature: 0 },
  })
  sampling_params!: GenerateRequest['sampling_params'];

  @StringField({ description: 'Served model name; omitted or null means the default model.' })
  model?: string | null;

  @EnumField(OUTPUT_MODES, {
    description:
      "'tokens' returns token ids only; 'text' also returns the detokenized text and logprobs with decoded tokens (needs a tokenizer).",
    default: 'tokens',
  })
  output_mode?: OutputMode | null;

  @BoolField({ description: 'Stream chunks as server-sent events.', default: false })
  stream?: boolean | null;

  @NestedField(() => StreamOptionsDto, { description: 'Usage reporting while streaming.' })
  stream_options?: StreamOptionsDto | null;

  @StringField({ description: 'Salt for the prefix cache (1..1024 characters).' })
  @Length(1, 1024)
  cache_salt?: string | null;

  @IntField({ description: 'Scheduling priority (lower runs earlier); non-zero needs --scheduling-policy priority.', default: 0 })
  priority?: number | null;

  @BoolField({ description: 'Return the prompt token ids (streaming: in the first chunk only).' })
  return_token_ids?: boolean | null;

  @ObjectField({ description: 'KV transfer parameters for disaggregated serving; echoed in the response.' })
  kv_transfer_params?: Record<string, unknown> | null;

  @ObjectField({ description: 'Encoder-cache transfer parameters; echoed in the response.' })
  ec_transfer_params?: Record<string, unknown> | null;

  @JsonListField(
    { description: 'Character offsets [start, end) of each token in the rendered text (from /render); informational.' },
    { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 },
  )
  token_offsets?: [number, number][] | null;

  @ObjectField({ description: 'Multimodal features from /render. Not supported: text-only models.' })
  features?: Record<string, unknown> | null;

  @JsonListField({ description: 'Raw multimodal content parts. Not supported: text-only models.' })
  content_parts?: Record<string, unknown>[] | null;

  @BoolField({ description: 'Set by /render: whether reasoning ended before the first generated token.' })
  reasoning_ended?: boolean | null;

  @ObjectField({ description: 'Set by /render: kwargs of the reasoning parser ({chat_template_kwargs}).' })
  reasoning_parser_kwargs?: Record<string, unknown> | null;
}
