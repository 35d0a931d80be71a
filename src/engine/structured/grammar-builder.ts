// ConstraintSpec → xgrammar Grammar (the parsed, tokenizer-independent form). xgrammar's
// refusal (a schema it rejects, an EBNF that does not parse, a regex it cannot read) is the
// client's 400; a trap is a GrammarTrapError, whose text is for the log only.

import { RequestValidationError } from '../errors';
import { toXgrammarEbnf } from './grammar-dialects';
import { jsonSchemaGrammar, structuralTagWithJsonWhitespace } from './json-whitespace';
import type { ConstraintKind, ConstraintSpec } from './grammar-spec';
import { guarded, XgrammarError, type BindingHandle, type Xgrammar } from './xgrammar';

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

/** xgrammar trapped on a spec: the instance that ran it must be discarded. `message` is xgrammar's, for the log. */
export class GrammarTrapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GrammarTrapError';
  }
}

/** Runs an xgrammar call on a client's spec: xgrammar's refusal is the client's 400 (param structured_outputs.<kind>). */
export function asRequestError<T>(spec: ConstraintSpec, call: () => T): T {
  try {
    return guarded(call);
  } catch (err) {
    if (!(err instanceof XgrammarError)) throw err;
    if (err.trapped) throw new GrammarTrapError(err.message);
    throw new RequestValidationError(`${WHAT[spec.kind]}: ${err.message}`, `structured_outputs.${spec.kind}`);
  }
}

/** The client's answer when compiling its spec trapped, ran out of time or of memory (the cause is logged). */
export function uncompilableError(spec: ConstraintSpec, why: string): RequestValidationError {
  return new RequestValidationError(`${WHAT[spec.kind]}: it could not be compiled (${why}); simplify it or make it smaller.`, `structured_outputs.${spec.kind}`);
}

function grammarOf(xg: Xgrammar, spec: ConstraintSpec): BindingHandle {
  switch (spec.kind) {
    case 'json':
    case 'json_object':
      return jsonSchemaGrammar(xg, spec.source, spec);
    case 'regex':
      return xg.grammar.FromStructuralTag(JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: spec.source } }));
    case 'choice':
      return xg.grammar.FromEBNF(spec.source, 'root');
    case 'grammar':
      return xg.grammar.FromEBNF(toXgrammarEbnf(spec.source), 'root');
    case 'structural_tag':
      return xg.grammar.FromStructuralTag(structuralTagWithJsonWhitespace(xg, spec.source, spec));
  }
}
