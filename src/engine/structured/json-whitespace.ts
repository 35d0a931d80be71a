// xgrammar's JSON-schema grammars honour the whitespace bound and the separators only in the
// rules built from the schema; its built-in rules for values of any type (json_object, an
// untyped property, additionalProperties) keep `[ \n\t]*` and ", ". Those rules are rewritten
// in the printed grammar, so every part of the JSON follows the same whitespace rule. Structural
// tags take no whitespace settings: their json_schema parts become grammars made here.

import type { ConstraintSpec } from './grammar-spec';
import type { BindingHandle, Xgrammar } from './xgrammar';

/** A Grammar handle: it prints itself as EBNF. */
interface PrintableGrammar extends BindingHandle {
  ToString(): string;
}

/** xgrammar's built-in any-value rules (basic_array, basic_object and their helpers). */
const BUILTIN_CONTAINER_RULE = /^basic_(array|object)(_\d+)? ::= /;
const ANY_WHITESPACE = '[ \\n\\t]*';

function rewriteRule(line: string, spec: ConstraintSpec): string {
  if (!BUILTIN_CONTAINER_RULE.test(line)) return line;
  if (!spec.anyWhitespace) return line.replaceAll('(", " ', '("," ');
  return spec.maxWhitespace === null ? line : line.replaceAll(ANY_WHITESPACE, `[ \\n\\t]{0,${spec.maxWhitespace}}`);
}

const COMPACT = { first: ',', second: ':' };

/** A JSON schema's grammar under the spec's whitespace rule (one line; compact: `,` and `:` alone). */
export function jsonSchemaGrammar(xg: Xgrammar, schema: string, spec: ConstraintSpec): BindingHandle {
  const separators = spec.anyWhitespace ? undefined : COMPACT;
  const grammar = xg.grammar.FromJSONSchema(schema, spec.anyWhitespace, undefined, separators, true, spec.maxWhitespace ?? undefined, false);
  return withJsonWhitespace(xg, grammar as PrintableGrammar, spec);
}

/** A structural tag's JSON with each json_schema part replaced by its grammar under the spec's whitespace rule. */
export function structuralTagWithJsonWhitespace(xg: Xgrammar, source: string, spec: ConstraintSpec): string {
  if (spec.anyWhitespace && spec.maxWhitespace === null) return source;
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (typeof node !== 'object' || node === null) return node;
    const part = node as Record<string, unknown>;
    if (part.type === 'json_schema' && part.json_schema !== undefined) {
      const grammar = jsonSchemaGrammar(xg, JSON.stringify(part.json_schema), spec) as PrintableGrammar;
      try {
        return { type: 'grammar', grammar: grammar.ToString() };
      } finally {
        grammar.delete();
      }
    }
    // A schema (of another part type) is left as it is.
    return Object.fromEntries(Object.entries(part).map(([key, value]) => [key, key === 'json_schema' ? value : rewrite(value)]));
  };
  return JSON.stringify(rewrite(JSON.parse(source)));
}

/** The JSON grammar with its built-in rules following the spec's whitespace rule (a new handle when it changed). */
function withJsonWhitespace(xg: Xgrammar, grammar: PrintableGrammar, spec: ConstraintSpec): BindingHandle {
  if (spec.anyWhitespace && spec.maxWhitespace === null) return grammar;
  const text = grammar.ToString();
  const rewritten = text
    .split('\n')
    .map((line) => rewriteRule(line, spec))
    .join('\n');
  if (rewritten === text) return grammar;
  grammar.delete();
  return xg.grammar.FromEBNF(rewritten, 'root');
}
