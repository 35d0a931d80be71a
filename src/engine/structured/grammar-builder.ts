// ConstraintSpec → xgrammar Grammar (the parsed, tokenizer-independent form). Building it is
// the request-time check (a schema xgrammar rejects, an EBNF that does not parse, a regex it
// cannot read → 400); compiling it against the vocabulary happens in the engine
// (grammar-compiler.ts).

import { RequestValidationError } from '../errors';
import type { StructuredOutputsParams } from '../types';
import { toXgrammarEbnf } from './grammar-dialects';
import { resolveConstraint, type ConstraintKind, type ConstraintSpec, type StructuredOutputsDefaults } from './grammar-spec';
import { guarded, loadedXgrammar, XgrammarError, type BindingHandle, type Xgrammar } from './xgrammar';

const WHAT: Record<ConstraintKind, string> = {
  json: 'Invalid JSON schema',
  json_object: 'Invalid JSON schema',
  regex: 'Invalid regex',
  choice: 'Invalid choice',
  grammar: 'Invalid grammar',
  structural_tag: 'Invalid structural tag',
};

/** Builds the xgrammar Grammar of a spec; throws RequestValidationError (param structured_outputs.<kind>). */
export function buildGrammar(xg: Xgrammar, spec: ConstraintSpec): BindingHandle {
  return asRequestError(spec, () => grammarOf(xg, spec));
}

/** Runs an xgrammar call on a client's spec: xgrammar's refusal is the client's 400 (param structured_outputs.<kind>). */
export function asRequestError<T>(spec: ConstraintSpec, call: () => T): T {
  try {
    return guarded(call);
  } catch (err) {
    if (!(err instanceof XgrammarError)) throw err;
    throw new RequestValidationError(`${WHAT[spec.kind]}: ${err.message}`, `structured_outputs.${spec.kind}`);
  }
}

function grammarOf(xg: Xgrammar, spec: ConstraintSpec): BindingHandle {
  switch (spec.kind) {
    case 'json':
    case 'json_object':
      // indent undefined = one line; separators default to ", " and ": " (Python's json.dumps).
      return xg.grammar.FromJSONSchema(spec.source, spec.anyWhitespace, undefined, undefined, true, undefined, false);
    case 'regex':
      return xg.grammar.FromStructuralTag(JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: spec.source } }));
    case 'choice':
      return xg.grammar.FromEBNF(spec.source, 'root');
    case 'grammar':
      return xg.grammar.FromEBNF(toXgrammarEbnf(spec.source), 'root');
    case 'structural_tag':
      return xg.grammar.FromStructuralTag(spec.source);
  }
}

/** Specs xgrammar already read in this thread (most recent last): a repeated schema is not parsed again. */
const readable = new Map<string, true>();
const READABLE_KEPT = 256;

/**
 * The request-time check of `structured_outputs`: shape, then (once xgrammar is loaded in this
 * thread, as the engine does at start-up) whether xgrammar can read the schema / grammar / regex.
 */
export function checkStructuredOutputs(so: StructuredOutputsParams, defaults?: StructuredOutputsDefaults): ConstraintSpec {
  const spec = resolveConstraint(so, defaults);
  const xg = loadedXgrammar();
  if (!xg) return spec;
  if (readable.delete(spec.key)) {
    readable.set(spec.key, true);
    return spec;
  }
  buildGrammar(xg, spec).delete();
  readable.set(spec.key, true);
  if (readable.size > READABLE_KEPT) readable.delete(readable.keys().next().value as string);
  return spec;
}
