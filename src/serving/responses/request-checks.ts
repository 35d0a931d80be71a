// The checks a /v1/responses body gets before anything runs, with vLLM's messages where vLLM
// has one. What ortllm cannot do (built-in tools, encrypted reasoning) is refused with 400 rather
// than silently ignored; function tools and tool_choice are checked with chat's rules
// (tool-choice.ts, in the Responses spelling).

import { RequestValidationError } from '../../engine/errors';
import { notSupportedYet } from '../unsupported';
import type { ResponsesRequestBody } from './protocol';

/** `include` values: what each asks for, and whether ortllm can give it. */
const INCLUDABLE: Record<string, 'honoured' | 'nothing-to-include' | 'refused'> = {
  'message.output_text.logprobs': 'honoured',
  // Items of these kinds never appear here (no built-in tools, no image input): nothing to add.
  'code_interpreter_call.outputs': 'nothing-to-include',
  'computer_call_output.output.image_url': 'nothing-to-include',
  'file_search_call.results': 'nothing-to-include',
  'message.input_image.image_url': 'nothing-to-include',
  'web_search_call.action.sources': 'nothing-to-include',
  'web_search_call.results': 'nothing-to-include',
  'reasoning.encrypted_content': 'refused',
};

const METADATA_LIMITS = { pairs: 16, key: 64, value: 512 };

export function checkResponsesRequest(body: ResponsesRequestBody): void {
  if (body.input == null) throw new RequestValidationError('input is required.', 'input');
  if (body.prompt != null) throw new RequestValidationError('prompt template is not supported', 'prompt');
  if (body.background && body.store === false) {
    throw new RequestValidationError('background can only be used when `store` is true', 'background');
  }
  if (body.previous_input_messages != null && body.previous_response_id != null) {
    throw new RequestValidationError('Only one of `previous_input_messages` and `previous_response_id` can be set.', 'previous_response_id');
  }
  if (body.top_logprobs != null && (body.top_logprobs < 0 || body.top_logprobs > 20)) {
    throw new RequestValidationError('top_logprobs must be between 0 and 20.', 'top_logprobs');
  }
  for (const value of body.include ?? []) {
    const kind = INCLUDABLE[value];
    if (kind === undefined) throw new RequestValidationError(`Unknown include value: '${value}'.`, 'include');
    if (kind === 'refused') notSupportedYet('include', `include '${value}'`);
  }
  checkMetadata(body.metadata);
  checkToolTypes(body.tools);
  checkTextFormat(body);
}

export function includesLogprobs(body: ResponsesRequestBody): boolean {
  return (body.include ?? []).includes('message.output_text.logprobs');
}

function checkMetadata(metadata: ResponsesRequestBody['metadata']): void {
  if (metadata == null) return;
  const entries = Object.entries(metadata);
  const bad = (message: string) => new RequestValidationError(message, 'metadata');
  if (entries.length > METADATA_LIMITS.pairs) throw bad(`metadata can have at most ${METADATA_LIMITS.pairs} key-value pairs.`);
  for (const [key, value] of entries) {
    if (key.length > METADATA_LIMITS.key) throw bad(`metadata keys can be at most ${METADATA_LIMITS.key} characters.`);
    if (typeof value !== 'string') throw bad(`metadata values must be strings ('${key}' is not).`);
    if (value.length > METADATA_LIMITS.value) throw bad(`metadata values can be at most ${METADATA_LIMITS.value} characters.`);
  }
}

/** Only function tools exist here: a built-in tool (web search, file search, MCP, ...) is a 400 naming its type. */
function checkToolTypes(tools: unknown): void {
  if (!Array.isArray(tools)) return;
  for (const [i, tool] of tools.entries()) {
    const type = tool && typeof tool === 'object' ? (tool as { type?: unknown }).type : undefined;
    if (type !== 'function') {
      throw new RequestValidationError(`tools[${i}]: tool type '${String(type)}' is not supported (only 'function' tools are).`, `tools.${i}.type`);
    }
  }
}

function checkTextFormat(body: ResponsesRequestBody): void {
  const type = body.text?.format?.type;
  if (type == null || type === 'text' || type === 'json_schema' || type === 'json_object') return;
  throw new RequestValidationError(`Unknown text.format type: ${JSON.stringify(type)}.`, 'text.format');
}

/**
 * text.format as chat's response_format, which the structured-outputs mapping reads: json_schema
 * ({name, schema, strict} flattened in the Responses API) and json_object constrain the output.
 */
export function textFormatAsResponseFormat(body: ResponsesRequestBody): Record<string, unknown> | null {
  const format = body.text?.format;
  if (format?.type === 'json_schema') return { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict } };
  if (format?.type === 'json_object') return { type: 'json_object' };
  return null;
}
