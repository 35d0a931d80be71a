// --structured-outputs-limits: the bounds on one request's structured-output constraint and
// the budget of its compile, as a JSON object of snake_case keys; unspecified keys keep their
// defaults, unknown keys are refused at start-up.

import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../engine/structured/grammar-limits';
import { parseJsonObjectFlag } from './structured-outputs-config';

const KEYS = {
  max_source_bytes: 'maxSourceBytes',
  max_nesting_depth: 'maxNestingDepth',
  max_ref_depth: 'maxRefDepth',
  max_alternatives: 'maxAlternatives',
  max_pattern_length: 'maxPatternLength',
  max_tools: 'maxTools',
  compile_timeout_s: 'compileTimeoutSeconds',
  compile_memory_mb: 'compileMemoryMb',
  compile_workers: 'compileWorkers',
} as const satisfies Record<string, keyof StructuredOutputsLimits>;

/** The WASM32 build cannot grow past 2 GiB. */
const MAX_COMPILE_MEMORY_MB = 2048;

/** Parses the flag's JSON text; throws Error with a readable message. */
export function parseStructuredOutputsLimits(text: string): StructuredOutputsLimits {
  const raw = parseJsonObjectFlag(text, '{"max_nesting_depth": 16, "compile_timeout_s": 5}');
  const limits = { ...DEFAULT_STRUCTURED_OUTPUTS_LIMITS };
  for (const [key, value] of Object.entries(raw)) {
    if (!(key in KEYS)) throw new Error(`unknown key '${key}' (supported: ${Object.keys(KEYS).join(', ')})`);
    const positive = key === 'compile_timeout_s' ? typeof value === 'number' && value > 0 : Number.isInteger(value) && (value as number) > 0;
    if (!positive) throw new Error(`${key} must be a positive ${key === 'compile_timeout_s' ? 'number' : 'integer'}`);
    if (key === 'compile_memory_mb' && (value as number) > MAX_COMPILE_MEMORY_MB) throw new Error(`compile_memory_mb must be at most ${MAX_COMPILE_MEMORY_MB}`);
    limits[KEYS[key as keyof typeof KEYS]] = value as number;
  }
  return limits;
}
