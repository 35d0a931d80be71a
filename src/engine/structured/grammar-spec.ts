// What a request's StructuredOutputsParams asks for, reduced to one constraint: its kind, the
// text xgrammar compiles, and the cache key. Shape errors (two kinds, an empty choice, wrong
// types) are RequestValidationErrors with `param`, raised before anything is compiled.

import { RequestValidationError } from '../errors';
import type { StructuredOutputsParams } from '../types';

export const CONSTRAINT_KINDS = ['json', 'regex', 'choice', 'grammar', 'json_object', 'structural_tag'] as const;
export type ConstraintKind = (typeof CONSTRAINT_KINDS)[number];

export interface ConstraintSpec {
  kind: ConstraintKind;
  /** The text handed to xgrammar: schema JSON, regex, EBNF (choice and grammar), structural tag JSON. */
  source: string;
  /** JSON (and a structural tag's JSON parts): whitespace between tokens (vLLM's default) or the compact spelling (`,` and `:`, nothing else). */
  anyWhitespace: boolean;
  /** JSON with anyWhitespace only: most whitespace characters in a row between tokens; null: no bound. */
  maxWhitespace: number | null;
  /** Cache key: kind + everything that changes the compiled grammar. */
  key: string;
}

/** Server-wide defaults (vLLM's --structured-outputs-config). */
export interface StructuredOutputsDefaults {
  disableAnyWhitespace: boolean;
  disableAdditionalProperties: boolean;
  /** Most whitespace characters in a row between JSON tokens; null: no bound (vLLM's behaviour). */
  maxWhitespace: number | null;
}

/**
 * Without a bound a small model can write `{` and then whitespace until max_tokens. One character
 * (a space or a newline) is what compact and one-line JSON need, and larger bounds let small models
 * finish less often (docs/structured-outputs.md).
 */
export const DEFAULT_MAX_WHITESPACE = 1;

export const NO_STRUCTURED_DEFAULTS: StructuredOutputsDefaults = {
  disableAnyWhitespace: false,
  disableAdditionalProperties: false,
  maxWhitespace: DEFAULT_MAX_WHITESPACE,
};

const PARAM = 'structured_outputs';

function fail(message: string): never {
  throw new RequestValidationError(message, PARAM);
}

/** The kinds set in the params (a kind counts when its value is not null / false). */
export function constraintKindsOf(so: StructuredOutputsParams): ConstraintKind[] {
  return CONSTRAINT_KINDS.filter((kind) => {
    const value = so[kind];
    return value !== undefined && value !== null && value !== false;
  });
}

/** Checks the shape and reduces the params to one ConstraintSpec; throws RequestValidationError (param structured_outputs). */
export function resolveConstraint(so: StructuredOutputsParams, defaults: StructuredOutputsDefaults = NO_STRUCTURED_DEFAULTS): ConstraintSpec {
  if (typeof so !== 'object' || so === null || Array.isArray(so)) fail('structured_outputs must be an object.');
  const kinds = constraintKindsOf(so);
  if (kinds.length === 0) {
    fail(`structured_outputs needs one of ${CONSTRAINT_KINDS.join(', ')}.`);
  }
  if (kinds.length > 1) {
    fail(`You can only use one kind of structured outputs constraint but multiple are specified: ${kinds.join(', ')}.`);
  }
  for (const flag of ['disable_fallback', 'disable_any_whitespace', 'disable_additional_properties', 'json_object'] as const) {
    const v = so[flag];
    if (v != null && typeof v !== 'boolean') fail(`structured_outputs.${flag} must be a boolean.`);
  }
  if (so.whitespace_pattern != null) {
    throw new RequestValidationError(
      'structured_outputs.whitespace_pattern is not supported by the xgrammar backend; use disable_any_whitespace instead.',
      `${PARAM}.whitespace_pattern`,
    );
  }
  const kind = kinds[0];
  const anyWhitespace = !(so.disable_any_whitespace ?? defaults.disableAnyWhitespace);
  const noAdditional = so.disable_additional_properties ?? defaults.disableAdditionalProperties;
  const source = constraintSource(so, kind, noAdditional);
  const hasJson = kind === 'json' || kind === 'json_object' || kind === 'structural_tag';
  const maxWhitespace = hasJson && anyWhitespace ? defaults.maxWhitespace : null;
  const key = `${kind}\u0000${hasJson ? (anyWhitespace ? `ws${maxWhitespace ?? ''}` : 'compact') : ''}\u0000${source}`;
  return { kind, source, anyWhitespace, maxWhitespace, key };
}

function constraintSource(so: StructuredOutputsParams, kind: ConstraintKind, noAdditional: boolean): string {
  switch (kind) {
    case 'json':
      return jsonSchemaText(so.json!, noAdditional);
    case 'json_object':
      return jsonSchemaText({ type: 'object' }, noAdditional);
    case 'regex':
      if (typeof so.regex !== 'string' || so.regex.length === 0) fail('structured_outputs.regex must be a non-empty string.');
      return so.regex;
    case 'choice': {
      const choice = so.choice;
      if (!Array.isArray(choice) || !choice.every((c) => typeof c === 'string')) fail('structured_outputs.choice must be a list of strings.');
      if (choice.length === 0) fail('structured_outputs.choice must not be empty.');
      return choiceGrammar(choice);
    }
    case 'grammar':
      if (typeof so.grammar !== 'string' || so.grammar.trim().length === 0) fail('structured_outputs.grammar must be a non-empty string.');
      return so.grammar;
    case 'structural_tag':
      return structuralTagText(so.structural_tag);
  }
}

function jsonSchemaText(schema: unknown, noAdditional: boolean): string {
  let parsed: unknown = schema;
  if (typeof schema === 'string') {
    try {
      parsed = JSON.parse(schema);
    } catch (err) {
      fail(`structured_outputs.json is not valid JSON: ${(err as Error).message}`);
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    if (typeof parsed !== 'boolean') fail('structured_outputs.json must be a JSON schema object.');
  }
  return JSON.stringify(noAdditional ? closeObjects(parsed) : parsed);
}

/** disable_additional_properties: every object schema gets additionalProperties: false. */
function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'const' || k === 'enum' || k === 'default' || k === 'examples' ? v : closeObjects(v);
  if (out.type === 'object' || out.properties !== undefined) out.additionalProperties = false;
  return out;
}

/** choice → `root ::= "a" | "b"` (vLLM compiles choice as a grammar too). */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${choices.map(ebnfString).join(' | ')}`;
}

/** An EBNF string literal for `text`: quotes, backslashes and control characters escaped. */
export function ebnfString(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * structural_tag: JSON text in xgrammar's format ({"type": "structural_tag", "format": …}), or
 * vLLM's legacy {"structures": [{begin, schema, end}], "triggers": […]}, rewritten to the former.
 */
function structuralTagText(value: unknown): string {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      fail(`structured_outputs.structural_tag is not valid JSON: ${(err as Error).message}`);
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) fail('structured_outputs.structural_tag must be a JSON object.');
  const tag = parsed as Record<string, unknown>;
  if (Array.isArray(tag.structures)) {
    if (!Array.isArray(tag.triggers) || !tag.triggers.every((t) => typeof t === 'string')) {
      fail('structured_outputs.structural_tag: "triggers" must be a list of strings.');
    }
    const tags = tag.structures.map((s: Record<string, unknown>) => {
      if (typeof s?.begin !== 'string' || typeof s?.end !== 'string') fail('structured_outputs.structural_tag: each structure needs "begin" and "end" strings.');
      return { type: 'tag', begin: s.begin, content: { type: 'json_schema', json_schema: s.schema ?? {} }, end: s.end };
    });
    return JSON.stringify({ type: 'structural_tag', format: { type: 'triggered_tags', triggers: tag.triggers, tags } });
  }
  if (typeof tag.format !== 'object' || tag.format === null) fail('structured_outputs.structural_tag needs a "format" object (or the legacy "structures" and "triggers").');
  return JSON.stringify({ ...tag, type: 'structural_tag' });
}
