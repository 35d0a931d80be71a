// The plain-TypeScript check of a constraint against StructuredOutputsLimits, run before
// xgrammar sees it: xgrammar's schema converter recurses without a bound (a deep schema or a
// long `$ref` chain overflows its WASM stack), so depth and size are measured here first.

import { RequestValidationError } from '../errors';
import type { StructuredOutputsParams } from '../types';
import type { StructuredOutputsLimits } from './grammar-limits';
import type { ConstraintSpec } from './grammar-spec';

/** Keywords whose value is one subschema. */
const ONE_SCHEMA = ['items', 'additionalItems', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'];
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems', 'items'];
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAP = ['properties', 'patternProperties', 'dependentSchemas'];
/** Keywords holding definitions: measured on their own (their depth counts where a $ref uses them). */
const DEFINITIONS = ['$defs', 'definitions'];

interface Depth {
  nesting: number;
  refs: number;
}

/** Throws RequestValidationError (param structured_outputs.<kind>) when the spec is over a limit. */
export function checkGrammarBounds(so: StructuredOutputsParams, spec: ConstraintSpec, limits: StructuredOutputsLimits): void {
  const param = `structured_outputs.${spec.kind}`;
  const over = (what: string, limit: number, flagKey: string): never => {
    throw new RequestValidationError(`${what} is over this server's limit of ${limit} (--structured-outputs-limits ${flagKey}).`, param);
  };
  if (spec.source.length > limits.maxSourceBytes) over(`The constraint's ${spec.source.length} characters`, limits.maxSourceBytes, 'max_source_bytes');
  switch (spec.kind) {
    case 'regex':
      if (spec.source.length > limits.maxPatternLength) over(`The regex's length (${spec.source.length})`, limits.maxPatternLength, 'max_pattern_length');
      return;
    case 'choice':
      if (Array.isArray(so.choice) && so.choice.length > limits.maxAlternatives) over(`The number of choices (${so.choice.length})`, limits.maxAlternatives, 'max_alternatives');
      return;
    case 'json':
    case 'json_object':
      new SchemaMeasure(JSON.parse(spec.source), limits, over).check();
      return;
    case 'structural_tag':
      checkStructuralTag(JSON.parse(spec.source), limits, over);
      return;
    case 'grammar':
      return;
  }
}

type Over = (what: string, limit: number, flagKey: string) => never;

/**
 * Walks a JSON schema's subschemas, following local `$ref`s: the deepest path (counting
 * containment and references apart) must stay within the limits. A reference back into the
 * current path is recursion, which xgrammar turns into a rule: it adds no depth.
 */
class SchemaMeasure {
  private readonly memo = new Map<object, Depth>();
  private readonly onPath = new Set<object>();

  constructor(
    private readonly root: unknown,
    private readonly limits: StructuredOutputsLimits,
    private readonly over: Over,
  ) {}

  check(): void {
    this.measure(this.root, 0, 0);
  }

  /** `nesting`: subschemas entered on this path, through references too (xgrammar inlines them); `refs`: references followed. */
  private measure(node: unknown, nesting: number, refs: number): Depth {
    this.checkDepth(nesting, refs);
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return { nesting: 0, refs: 0 };
    if (this.onPath.has(node)) return { nesting: 0, refs: 0 };
    const known = this.memo.get(node);
    if (known) {
      // Measured before on another path: only the sum with this path's depth is new.
      this.checkDepth(nesting + known.nesting, refs + known.refs);
      return known;
    }
    this.onPath.add(node);
    const schema = node as Record<string, unknown>;
    this.checkKeywords(schema);
    const depth: Depth = { nesting: 0, refs: 0 };
    const visit = (child: unknown, viaRef: boolean) => {
      const d = viaRef ? this.measure(child, nesting, refs + 1) : this.measure(child, nesting + 1, refs);
      depth.nesting = Math.max(depth.nesting, d.nesting + (viaRef ? 0 : 1));
      depth.refs = Math.max(depth.refs, d.refs + (viaRef ? 1 : 0));
    };
    for (const key of DEFINITIONS) if (isObject(schema[key])) for (const def of Object.values(schema[key])) this.measure(def, 0, 0);
    for (const child of subschemas(schema)) visit(child, false);
    if (typeof schema.$ref === 'string') {
      const target = resolvePointer(this.root, schema.$ref);
      if (target !== undefined) visit(target, true);
    }
    this.onPath.delete(node);
    this.memo.set(node, depth);
    return depth;
  }

  private checkDepth(nesting: number, refs: number): void {
    const { maxNestingDepth, maxRefDepth } = this.limits;
    if (nesting > maxNestingDepth) this.over(`The schema's nesting depth (more than ${maxNestingDepth}, $ref targets included)`, maxNestingDepth, 'max_nesting_depth');
    if (refs > maxRefDepth) this.over(`The schema's chain of $ref (more than ${maxRefDepth})`, maxRefDepth, 'max_ref_depth');
  }

  private checkKeywords(schema: Record<string, unknown>): void {
    const { maxAlternatives, maxPatternLength } = this.limits;
    for (const key of ['enum', 'anyOf', 'oneOf', 'allOf', 'prefixItems']) {
      const list = schema[key];
      if (Array.isArray(list) && list.length > maxAlternatives) this.over(`The ${list.length} entries of one "${key}"`, maxAlternatives, 'max_alternatives');
    }
    const patterns = [schema.pattern, ...Object.keys(isObject(schema.patternProperties) ? schema.patternProperties : {})];
    for (const pattern of patterns) {
      if (typeof pattern === 'string' && pattern.length > maxPatternLength) this.over(`A "pattern" of ${pattern.length} characters`, maxPatternLength, 'max_pattern_length');
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function* subschemas(schema: Record<string, unknown>): Generator<unknown> {
  for (const key of ONE_SCHEMA) if (isObject(schema[key])) yield schema[key];
  for (const key of SCHEMA_LIST) if (Array.isArray(schema[key])) yield* schema[key] as unknown[];
  for (const key of SCHEMA_MAP) if (isObject(schema[key])) yield* Object.values(schema[key]);
}

/** A local reference ("#", "#/$defs/a", JSON-pointer escapes); undefined when it points nowhere or elsewhere. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** A structural tag: each embedded json_schema within the schema limits, lists and nesting bounded. */
function checkStructuralTag(tag: unknown, limits: StructuredOutputsLimits, over: Over): void {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: tag, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > 2 * limits.maxNestingDepth) over(`The structural tag's nesting depth (more than ${2 * limits.maxNestingDepth})`, 2 * limits.maxNestingDepth, 'max_nesting_depth');
    if (Array.isArray(node)) {
      if (node.length > limits.maxAlternatives) over(`A list of ${node.length} entries`, limits.maxAlternatives, 'max_alternatives');
      for (const item of node) stack.push({ node: item, depth: depth + 1 });
      continue;
    }
    if (!isObject(node)) continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'json_schema' || key === 'schema') new SchemaMeasure(value, limits, over).check();
      else if (key === 'pattern' && typeof value === 'string' && value.length > limits.maxPatternLength) over(`A "pattern" of ${value.length} characters`, limits.maxPatternLength, 'max_pattern_length');
      else stack.push({ node: value, depth: depth + 1 });
    }
  }
}
