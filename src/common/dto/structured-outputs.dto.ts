// Request fields of structured outputs (vLLM's StructuredOutputsParams and response_format), for
// validation and the OpenAPI spec. The meaning lives in src/serving/structured-outputs.ts and
// src/engine/structured/.

import { ApiSchema } from '@nestjs/swagger';
import type { StructuredOutputsParams } from '../../engine/types';
import { AnyField, BoolField, EnumField, NestedField, ObjectField, StringField, StringListField } from './api-field';

const JSON_SCHEMA_VALUE = { oneOf: [{ type: 'object', additionalProperties: true }, { type: 'string' }] };

@ApiSchema({ name: 'StructuredOutputsParams' })
export class StructuredOutputsDto implements StructuredOutputsParams {
  @AnyField({ description: 'The output is JSON that validates against this JSON schema (an object, or its JSON text).' }, JSON_SCHEMA_VALUE)
  json?: string | Record<string, unknown> | null;

  @StringField({ description: 'The output fully matches this regular expression.', example: '[A-Z][a-z]+-[0-9]{3}' })
  regex?: string | null;

  @StringListField({ description: 'The output is exactly one of these strings (at least one).' })
  choice?: string[] | null;

  @StringField({
    description:
      'The output is in the language of this grammar: xgrammar EBNF (`root ::= …`), the GBNF spelling llama.cpp uses ' +
      '(empty alternatives, `.`), or Lark (`start: …`).',
    example: 'root ::= ("yes" | "no") " " [0-9]+',
  })
  grammar?: string | null;

  @BoolField({ description: 'The output is a JSON object (any keys).' })
  json_object?: boolean | null;

  @StringField({
    description:
      'xgrammar structural tag as JSON text: {"type": "structural_tag", "format": {...}}, or the legacy ' +
      '{"structures": [{"begin", "schema", "end"}], "triggers": [...]}.',
  })
  structural_tag?: string | null;

  @BoolField({ description: 'Accepted; there is one backend (xgrammar), so nothing to fall back to.', default: false })
  disable_fallback?: boolean | null;

  @BoolField({ description: 'JSON: no free whitespace between tokens (compact `{"a": 1, "b": 2}`).', default: false })
  disable_any_whitespace?: boolean | null;

  @BoolField({ description: 'JSON: objects may not carry properties the schema does not name.', default: false })
  disable_additional_properties?: boolean | null;

  @StringField({ description: 'Not supported by the xgrammar backend: answered with 400 (use disable_any_whitespace).' })
  whitespace_pattern?: string | null;
}

@ApiSchema({ name: 'JsonSchemaResponseFormat' })
export class JsonSchemaFormatDto {
  @StringField({ description: 'Name of the schema (OpenAI requires it; informational here).' })
  name?: string | null;

  @StringField({ description: 'What the schema is for (informational).' })
  description?: string | null;

  @ObjectField({ description: 'The JSON schema the output must validate against.' })
  schema?: Record<string, unknown> | null;

  @BoolField({ description: 'Accepted: the output always follows the schema exactly.' })
  strict?: boolean | null;
}

export class ResponseFormatDto {
  @EnumField(['text', 'json_object', 'json_schema', 'structural_tag'], { description: 'Output format.', required: true })
  type!: 'text' | 'json_object' | 'json_schema' | 'structural_tag';

  @NestedField(() => JsonSchemaFormatDto, { description: "type 'json_schema': the schema." })
  json_schema?: JsonSchemaFormatDto | null;

  @AnyField({ description: "type 'structural_tag': the tag format (xgrammar structural tag)." }, { type: 'object', additionalProperties: true })
  format?: unknown;

  @AnyField({ description: "type 'structural_tag', legacy form: [{begin, schema, end}]." }, { type: 'array', items: { type: 'object', additionalProperties: true } })
  structures?: unknown;

  @AnyField({ description: "type 'structural_tag', legacy form: trigger prefixes." }, { type: 'array', items: { type: 'string' } })
  triggers?: unknown;
}

/** The structured-output fields of completions and chat (response_format, structured_outputs, deprecated guided_*). */
export class StructuredOutputsFieldsDto {
  @NestedField(() => ResponseFormatDto, { description: 'OpenAI response format: json_object, json_schema, structural_tag or text.' })
  response_format?: ResponseFormatDto | null;

  @NestedField(() => StructuredOutputsDto, {
    description: 'Constrain the output (exactly one of json, regex, choice, grammar, json_object, structural_tag).',
  })
  structured_outputs?: StructuredOutputsDto | null;

  @AnyField({ description: 'Deprecated: structured_outputs.json.' }, { ...JSON_SCHEMA_VALUE, deprecated: true })
  guided_json?: unknown;

  @AnyField({ description: 'Deprecated: structured_outputs.regex.' }, { type: 'string', deprecated: true })
  guided_regex?: unknown;

  @AnyField({ description: 'Deprecated: structured_outputs.choice.' }, { type: 'array', items: { type: 'string' }, deprecated: true })
  guided_choice?: unknown;

  @AnyField({ description: 'Deprecated: structured_outputs.grammar.' }, { type: 'string', deprecated: true })
  guided_grammar?: unknown;

  @AnyField({ description: 'Deprecated: structured_outputs.whitespace_pattern (not supported: 400).' }, { type: 'string', deprecated: true })
  guided_whitespace_pattern?: unknown;

  @AnyField({ description: "Deprecated: the backend is the server's (xgrammar); 'xgrammar' and 'auto' are accepted." }, { type: 'string', deprecated: true })
  guided_decoding_backend?: unknown;

  @AnyField({ description: 'Deprecated: structured_outputs.structural_tag.' }, { type: 'string', deprecated: true })
  structural_tag?: unknown;
}
