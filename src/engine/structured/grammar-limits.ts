// Bounds on what one request may ask the grammar engine to build (--structured-outputs-limits).
// Specs over a bound are refused with a 400 before xgrammar sees them; compiles that pass are
// still run under a time and memory budget in a disposable worker (grammar-trial-pool.ts).

import { availableParallelism } from 'node:os';

export interface StructuredOutputsLimits {
  /** Characters of the spec handed to xgrammar (schema JSON, regex, EBNF, structural tag). */
  maxSourceBytes: number;
  /** Nesting of objects/arrays inside a JSON schema or structural tag. */
  maxNestingDepth: number;
  /** Longest chain of `$ref`s followed without a cycle. */
  maxRefDepth: number;
  /** Values of one `enum`, branches of one `anyOf`/`oneOf`, entries of a `choice`. */
  maxAlternatives: number;
  /** Characters of one regex (`structured_outputs.regex`, a schema's `pattern`). */
  maxPatternLength: number;
  /** Function tools that `tool_choice: "required"` turns into one grammar. */
  maxTools: number;
  /** Wall-clock budget of one compile, in seconds. */
  compileTimeoutSeconds: number;
  /** WASM memory one compile may grow to, in MiB. */
  compileMemoryMb: number;
  /** Threads that compile untrusted specs (their own xgrammar instances). */
  compileWorkers: number;
}

/** One compile thread per four cores (at least one, at most four): compiles compete with the engine for CPU. */
function defaultCompileWorkers(cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, Math.floor(cores / 4)));
}

export const DEFAULT_STRUCTURED_OUTPUTS_LIMITS: StructuredOutputsLimits = {
  maxSourceBytes: 256 * 1024,
  maxNestingDepth: 32,
  maxRefDepth: 32,
  maxAlternatives: 2048,
  maxPatternLength: 4096,
  maxTools: 512,
  compileTimeoutSeconds: 10,
  compileMemoryMb: 512,
  compileWorkers: defaultCompileWorkers(),
};
