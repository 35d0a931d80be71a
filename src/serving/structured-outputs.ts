// A request's structured-output fields → the engine's StructuredOutputsParams, as vLLM maps them:
//   - `structured_outputs` as sent;
//   - `response_format` {type: json_object | json_schema | structural_tag | text};
//   - the deprecated `guided_json` / `guided_regex` / `guided_choice` / `guided_grammar` /
//     `guided_whitespace_pattern` / `guided_decoding_backend` (and the old top-level
//     `structural_tag`).
// Two constraining sources at once (or two kinds inside one) → 400; options-only sources merge. `param` is the field the client sent,
// so the engine's later checks (schema, grammar, regex) name it too (SamplingContext.paramNames).
//
// Tool calling and reasoning build on this: a `tool_choice` that forces a call is one more
// source turned into StructuredOutputsParams here (e.g. {json: <array of {name, parameters}>}).

import { RequestValidationError } from '../engine/errors';
import type { StructuredOutputsParams } from '../engine/types';

export interface StructuredOutputsRequestFields {
  response_format?: unknown;
  structured_outputs?: unknown;
  guided_json?: unknown;
  guided_regex?: unknown;
  guided_choice?: unknown;
  guided_grammar?: unknown;
  guided_whitespace_pattern?: unknown;
  guided_decoding_backend?: unknown;
  structural_tag?: unknown;
}

export interface RequestedStructuredOutputs {
  params: StructuredOutputsParams;
  /** The request field it came from (the `param` of later errors). */
  param: string;
}

/** Deprecated field → StructuredOutputsParams key (vLLM's mapping). */
const GUIDED_ALIASES = {
  guided_json: 'json',
  guided_regex: 'regex',
  guided_choice: 'choice',
  guided_grammar: 'grammar',
  guided_whitespace_pattern: 'whitespace_pattern',
  structural_tag: 'structural_tag',
} as const satisfies Record<string, keyof StructuredOutputsParams>;

/** The request field each StructuredOutputsParams came from (errors the engine raises later name it). */
const sourceFields = new WeakMap<StructuredOutputsParams, string>();

/**
 * Errors about a constraint that only the engine can find (xgrammar's refusal, a bound, a
 * compile budget) name `structured_outputs.<kind>`; the client sees the field it sent.
 */
export function withSourceParam(err: unknown, so: StructuredOutputsParams | null): unknown {
  if (!(err instanceof RequestValidationError) || !so || !err.param?.startsWith('structured_outputs')) return err;
  return new RequestValidationError(err.message, sourceFields.get(so) ?? 'structured_outputs');
}

/** Names the field a constraint came from when the client spelled it differently (Responses' text.format for response_format). */
export function renameSourceField(so: StructuredOutputsParams | null | undefined, from: string, to: string): void {
  if (so && sourceFields.get(so) === from) sourceFields.set(so, to);
}

/** The only backend; 'auto' picks it (vLLM also accepts backend options after a colon). */
const BACKENDS = new Set(['xgrammar', 'auto']);

const present = (v: unknown) => v !== undefined && v !== null;

/** Null when the request asks for no constraint; throws RequestValidationError (400 with param). */
export function structuredOutputsFromRequest(body: StructuredOutputsRequestFields): RequestedStructuredOutputs | null {
  checkBackend(body.guided_decoding_backend);
  const sources: RequestedStructuredOutputs[] = [];
  if (present(body.structured_outputs)) sources.push({ params: asObject(body.structured_outputs, 'structured_outputs'), param: 'structured_outputs' });
  const fromFormat = fromResponseFormat(body.response_format);
  if (fromFormat) sources.push({ params: fromFormat, param: 'response_format' });
  const guided: StructuredOutputsParams = {};
  const guidedFields: string[] = [];
  for (const [field, key] of Object.entries(GUIDED_ALIASES)) {
    const value = body[field as keyof StructuredOutputsRequestFields];
    if (!present(value)) continue;
    (guided as Record<string, unknown>)[key] = value;
    guidedFields.push(field);
  }
  if (guidedFields.length > 0) sources.push({ params: guided, param: guidedFields[0] });
  const merged = mergeSources(sources);
  if (merged) sourceFields.set(merged.params, merged.param);
  return merged;
}

/** The keys of StructuredOutputsParams that constrain the output (the rest are options of one). */
const CONSTRAINT_KINDS = ['json', 'regex', 'choice', 'grammar', 'json_object', 'structural_tag'] as const;

const constrains = (params: StructuredOutputsParams) => CONSTRAINT_KINDS.some((kind) => present(params[kind]));

/**
 * One constraint at most. A source that carries only options (`structured_outputs:
 * {disable_any_whitespace: true}` beside a `response_format`, say) adds them to the constraining
 * one, as vLLM fills response_format into the request's structured_outputs object.
 */
function mergeSources(sources: RequestedStructuredOutputs[]): RequestedStructuredOutputs | null {
  const constraining = sources.filter((source) => constrains(source.params));
  if (constraining.length > 1) {
    throw new RequestValidationError(
      `Only one of structured_outputs, response_format and the guided_* fields may constrain the output; got ${constraining.map((s) => s.param).join(' and ')}.`,
      constraining[1].param,
    );
  }
  const [main] = constraining;
  if (!main) return sources[0] ?? null;
  const options = sources.filter((source) => source !== main).map((source) => source.params);
  return { params: Object.assign({}, ...options, main.params) as StructuredOutputsParams, param: main.param };
}

function checkBackend(backend: unknown): void {
  if (!present(backend)) return;
  const name = typeof backend === 'string' ? backend.split(':')[0] : null;
  if (name === null || !BACKENDS.has(name)) {
    throw new RequestValidationError(
      `guided_decoding_backend ${JSON.stringify(backend)} is not available: this server's structured-outputs backend is xgrammar ('xgrammar' or 'auto').`,
      'guided_decoding_backend',
    );
  }
}

function asObject(value: unknown, param: string): StructuredOutputsParams {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RequestValidationError(`${param} must be an object.`, param);
  }
  return { ...(value as StructuredOutputsParams) };
}

/** response_format → StructuredOutputsParams (null for absent or {type: 'text'}). */
function fromResponseFormat(format: unknown): StructuredOutputsParams | null {
  if (!present(format)) return null;
  const f = asObject(format, 'response_format') as Record<string, unknown>;
  switch (f.type) {
    case 'text':
      return null;
    case 'json_object':
      return { json_object: true };
    case 'json_schema': {
      const spec = f.json_schema as Record<string, unknown> | undefined;
      if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
        throw new RequestValidationError("response_format of type 'json_schema' needs a `json_schema` object.", 'response_format');
      }
      const schema = spec.schema ?? spec.json_schema;
      if (!present(schema)) throw new RequestValidationError('response_format.json_schema.schema is required.', 'response_format');
      return { json: schema as StructuredOutputsParams['json'] };
    }
    case 'structural_tag':
      return { structural_tag: JSON.stringify(f) };
    default:
      throw new RequestValidationError(
        `response_format.type must be one of 'text', 'json_object', 'json_schema' or 'structural_tag', got ${JSON.stringify(f.type)}.`,
        'response_format',
      );
  }
}
