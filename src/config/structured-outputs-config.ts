// --structured-outputs-config: vLLM's StructuredOutputsConfig as a JSON object
// ({"backend": "xgrammar", "disable_any_whitespace": true, …}). Keys this server cannot honour
// are refused at start-up rather than ignored.

import { DEFAULT_MAX_WHITESPACE, type StructuredOutputsDefaults } from '../engine/structured/grammar-spec';

export interface StructuredOutputsConfig extends StructuredOutputsDefaults {
  /** 'auto' or 'xgrammar': the only backend. */
  backend: 'auto' | 'xgrammar';
}

export const DEFAULT_STRUCTURED_OUTPUTS_CONFIG: StructuredOutputsConfig = {
  backend: 'auto',
  disableAnyWhitespace: false,
  disableAdditionalProperties: false,
  maxWhitespace: DEFAULT_MAX_WHITESPACE,
};

/** Bounds a run of JSON whitespace must stay under for xgrammar (a larger bound is as good as none). */
const MAX_WHITESPACE_LIMIT = 1024;

const BOOLEAN_KEYS = {
  disable_any_whitespace: 'disableAnyWhitespace',
  disable_additional_properties: 'disableAdditionalProperties',
} as const;

/** A flag's JSON-object text → the object; throws Error with a readable message (`example`: a correct value). */
export function parseJsonObjectFlag(text: string, example: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(text) as unknown;
  } catch {
    throw new Error(`'${text}' is not a JSON object, e.g. '${example}'`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`'${text}' must be a JSON object`);
  return raw as Record<string, unknown>;
}

/** Parses the flag's JSON text; throws Error with a readable message. */
export function parseStructuredOutputsConfig(text: string): StructuredOutputsConfig {
  const raw = parseJsonObjectFlag(text, '{"backend": "xgrammar", "disable_any_whitespace": true}');
  const config = { ...DEFAULT_STRUCTURED_OUTPUTS_CONFIG };
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'backend') {
      if (value !== 'auto' && value !== 'xgrammar') throw new Error(`backend ${JSON.stringify(value)} is not available; this server has 'xgrammar' (or 'auto')`);
      config.backend = value;
    } else if (key === 'disable_fallback') {
      if (typeof value !== 'boolean') throw new Error('disable_fallback must be true or false');
      // One backend: there is never a fallback, so either value holds.
    } else if (key === 'max_whitespace') {
      // Not a vLLM key (vLLM has no bound): null restores its unbounded whitespace.
      if (value !== null && !(Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_WHITESPACE_LIMIT)) {
        throw new Error(`max_whitespace must be an integer from 1 to ${MAX_WHITESPACE_LIMIT}, or null for no bound`);
      }
      config.maxWhitespace = value as number | null;
    } else if (key in BOOLEAN_KEYS) {
      if (typeof value !== 'boolean') throw new Error(`${key} must be true or false`);
      config[BOOLEAN_KEYS[key as keyof typeof BOOLEAN_KEYS]] = value;
    } else {
      throw new Error(`unknown or unsupported key '${key}' (supported: backend, disable_fallback, disable_any_whitespace, disable_additional_properties, max_whitespace)`);
    }
  }
  return config;
}
