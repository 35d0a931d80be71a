// POST /v1/responses body: OpenAI's ResponseCreateParams plus vLLM's extra request fields.
// Shapes of items, tools and text.format are checked by the serving layer (with `param`).

import { ApiSchema } from '@nestjs/swagger';
import type { ReasoningConfig, ResponsesRequestBody, TextConfig } from '../../../serving/responses/protocol';
import {
  AnyField, BoolField, Check, EnumField, IntField, JsonListField, LogitBiasField, NestedField, NumberField, ObjectField, StopField, StringField,
  StringListField,
} from '../../../common/dto/api-field';
import { REASONING_EFFORTS, RESPONSES_TOOL_CHOICE_SCHEMA, RESPONSES_TOOL_SCHEMA } from '../../../common/dto/tool-fields';
import { ApiProperty } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';

const INPUT_ITEM_SCHEMA = {
  type: 'object',
  description: "A message ({role, content} with 'input_text' parts or a string), a function_call, a function_call_output or a reasoning item.",
  properties: {
    type: { type: 'string', enum: ['message', 'function_call', 'function_call_output', 'reasoning'], description: "The kind of item (default 'message' when role is set)." },
    role: { type: 'string', enum: ['user', 'system', 'developer', 'assistant'], description: 'message: who speaks.' },
    content: {
      oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }],
      description: "message: a string or parts ({type: 'input_text' | 'output_text', text}).",
    },
    call_id: { type: 'string', description: 'function_call / function_call_output: the call id.' },
    name: { type: 'string', description: 'function_call: the function name.' },
    arguments: { type: 'string', description: 'function_call: the arguments as a JSON string.' },
    output: { type: 'string', description: 'function_call_output: what the function returned.' },
  },
  additionalProperties: true,
};

const isInput = (v: unknown) => typeof v === 'string' || Array.isArray(v);

/** `reasoning`: OpenAI's Reasoning object. */
@ApiSchema({ name: 'Reasoning' })
export class ReasoningDto implements ReasoningConfig {
  [key: string]: unknown;

  @EnumField(REASONING_EFFORTS, {
    description: 'Passed to the chat template as `reasoning_effort`; also sets `enable_thinking` (false for "none") unless chat_template_kwargs does.',
  })
  effort?: string | null;

  @EnumField(['auto', 'concise', 'detailed'], { description: 'Ignored (logged once): reasoning items carry the whole thinking, never a summary.' })
  summary?: string | null;
}

@ApiSchema({ name: 'ResponsesRequest' })
export class ResponsesRequestDto implements ResponsesRequestBody {
  [key: string]: unknown;

  @ApiProperty({
    required: true,
    description: 'The input: a string (one user message) or a list of input items.',
    oneOf: [{ type: 'string' }, { type: 'array', items: INPUT_ITEM_SCHEMA }],
    example: 'Tell me a story.',
  })
  @Check('isInput', isInput, '$property must be a string or a list of input items')
  input!: unknown;

  @StringField({ description: 'Served model name; omitted = the served model.' })
  model?: string | null;

  @StringField({ description: 'A system message put before the conversation (not carried over by previous_response_id).' })
  instructions?: string | null;

  @IntField({ description: 'Most output tokens. Default: up to the context limit.' })
  max_output_tokens?: number | null;

  @IntField({ description: 'Most built-in tool calls (echoed; ortllm has no built-in tools).' })
  max_tool_calls?: number | null;

  @NumberField({ description: 'Sampling temperature; 0 = greedy. Default from generation_config.json, else 1.', default: 1 })
  temperature?: number | null;

  @NumberField({ description: 'Nucleus sampling threshold. Default from generation_config.json, else 1.', default: 1 })
  top_p?: number | null;

  @IntField({ description: 'Keep the k most likely tokens (vLLM); 0 or -1 disables.' })
  top_k?: number | null;

  @IntField({ description: "Alternatives per output token (0-20), returned with include ['message.output_text.logprobs'].", default: 0 })
  top_logprobs?: number | null;

  @ObjectField({ description: "Text output options: format {type: 'text'}, {type: 'json_schema', name, schema, strict} or {type: 'json_object'} (the output is constrained to it)." })
  text?: TextConfig | null;

  @JsonListField(
    { description: 'Function tools the model may call; the chat template renders them. Built-in tool types (web search, file search, MCP, …) are answered with 400.' },
    RESPONSES_TOOL_SCHEMA,
  )
  tools?: unknown[] | null;

  @AnyField(
    {
      description:
        '"auto" (the default with tools; needs --enable-auto-tool-choice and --tool-call-parser), "none", "required" or ' +
        '`{"type": "function", "name": …}`: required and named force calls through structured outputs.',
    },
    RESPONSES_TOOL_CHOICE_SCHEMA,
  )
  tool_choice?: unknown;

  @BoolField({ description: 'false: at most one function call per turn.', default: true })
  parallel_tool_calls?: boolean | null;

  @NestedField(() => ReasoningDto, { description: 'Reasoning options: `effort` reaches the chat template; with --reasoning-parser the thinking is a reasoning output item.' })
  reasoning?: ReasoningDto | null;

  @BoolField({ description: 'Keep the response for GET, input_items and previous_response_id.', default: true })
  store?: boolean | null;

  @BoolField({ description: 'Run in the background: answered at once with status queued; poll with GET, stop with cancel. Needs store.', default: false })
  background?: boolean | null;

  @BoolField({ description: 'Stream typed events (event: lines with sequence_number).', default: false })
  stream?: boolean | null;

  @StringField({ description: 'Continue the conversation of this stored response.' })
  previous_response_id?: string | null;

  @ObjectField({ description: 'Up to 16 string key-value pairs, echoed.' }, { type: 'string' })
  metadata?: Record<string, string> | null;

  @EnumField(['auto', 'disabled'], { description: "'auto' drops the oldest prompt tokens to fit the context; 'disabled' answers 400 instead.", default: 'disabled' })
  truncation?: 'auto' | 'disabled' | null;

  @StringField({ description: 'End-user id, echoed.' })
  user?: string | null;

  @StringListField({ description: "Extra output: 'message.output_text.logprobs'." })
  include?: string[] | null;

  @EnumField(['auto', 'default', 'flex', 'scale', 'priority'], { description: 'Echoed.', default: 'auto' })
  service_tier?: string | null;

  @AnyField({ description: 'Prompt templates are not supported: answered with 400.' })
  prompt?: unknown;

  @StringField({ description: 'Accepted and ignored (prefix caching is automatic).' })
  prompt_cache_key?: string | null;

  @LogitBiasField({ description: 'Bias added to the logits of token ids (vLLM).' })
  logit_bias?: Record<string, number> | null;

  @BoolField({ description: 'Leave special tokens out of the text (vLLM).', default: true })
  skip_special_tokens?: boolean | null;

  @BoolField({ description: 'Keep the matched stop string in the output (vLLM).', default: false })
  include_stop_str_in_output?: boolean | null;

  @StringField({ description: 'The response id (vLLM: used as sent; default resp_<random>, or resp_<X-Request-Id>).' })
  request_id?: string | null;

  @IntField({ description: 'Scheduling priority (lower first); needs --scheduling-policy priority when non-zero.', default: 0 })
  priority?: number | null;

  @StringField({ description: 'Salt for the prefix cache.' })
  cache_salt?: string | null;

  @AnyField({ description: "vLLM's structured outputs (json, regex, choice, grammar, json_object, structural_tag); not together with text.format." })
  structured_outputs?: unknown;

  @NumberField({ description: 'Repetition penalty in (0, 2]; 1 = none (vLLM).' })
  repetition_penalty?: number | null;

  @IntField({ description: 'Seed of this request\'s own random generator (vLLM).' })
  seed?: number | null;

  @StopField({ description: 'Strings that end generation (vLLM).' })
  stop?: string | string[] | null;

  @BoolField({ description: 'Keep generating after EOS (vLLM).', default: false })
  ignore_eos?: boolean | null;

  @ObjectField({ description: 'Extra parameters for custom extensions (vLLM).' })
  vllm_xargs?: Record<string, unknown> | null;

  @ObjectField({ description: 'KV-transfer parameters for disaggregated serving (accepted and echoed).' })
  kv_transfer_params?: Record<string, unknown> | null;

  @ObjectField({ description: 'Extra variables for the chat template.' })
  chat_template_kwargs?: Record<string, unknown> | null;

  @BoolField({ description: 'Return input_messages / output_messages: the raw prompt and output text with token ids (vLLM).', default: false })
  enable_response_messages?: boolean | null;

  @ApiProperty({ required: false, nullable: true, type: 'array', items: { type: 'object', additionalProperties: true }, description: 'Chat messages to continue from instead of previous_response_id (vLLM).' })
  @IsOptional()
  previous_input_messages?: unknown[] | null;
}
