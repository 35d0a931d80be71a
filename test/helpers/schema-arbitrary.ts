// fast-check arbitraries from the OpenAPI spec's JSON schemas: request bodies shaped like what a
// client would send (every declared property, optional ones sometimes absent, nullable ones
// sometimes null), with now and then a value of the wrong type, so fuzzing reaches both the
// validation and the code behind it. Sizes stay small: numbers in a narrow range (a max_tokens of
// 10^9 only tests one 400), short strings and lists.

import fc from 'fast-check';

type Schema = Record<string, unknown>;
export type OpenApiDoc = { paths: Record<string, Record<string, unknown>>; components?: { schemas?: Record<string, Schema> } };

const SMALL_INT = { min: -3, max: 24 };
const SMALL_NUMBER = { min: -3, max: 3 };

export interface ArbitraryOptions {
  /** Probability that a value is replaced by any JSON value (wrong type, on purpose). */
  wrongTypeRate: number;
  /** Properties set to fixed choices (e.g. `model`: the served name or absent). */
  overrides?: Record<string, fc.Arbitrary<unknown>>;
  /** Top-level objects carry their required properties and at most this many others (bodies that get past validation more often). */
  maxOptionalKeys?: number;
}

function resolve(doc: OpenApiDoc, schema: Schema): Schema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === 'string' && hops < 20; hops++) {
    const name = current.$ref.replace('#/components/schemas/', '');
    current = doc.components?.schemas?.[name] ?? {};
  }
  return current;
}

const anyJson = fc.jsonValue({ maxDepth: 2 });

export function arbitraryFor(doc: OpenApiDoc, schema: Schema, options: ArbitraryOptions, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, schema);
  const plain = typedArbitrary(doc, s, options, depth);
  const withNull = s.nullable === true ? fc.oneof({ weight: 5, arbitrary: plain }, { weight: 1, arbitrary: fc.constant(null) }) : plain;
  if (options.wrongTypeRate <= 0) return withNull;
  const wrongWeight = Math.max(1, Math.round(options.wrongTypeRate * 100));
  return fc.oneof({ weight: 100 - wrongWeight, arbitrary: withNull }, { weight: wrongWeight, arbitrary: anyJson });
}

function typedArbitrary(doc: OpenApiDoc, s: Schema, options: ArbitraryOptions, depth: number): fc.Arbitrary<unknown> {
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alternatives?.length) return fc.oneof(...alternatives.map((alt) => arbitraryFor(doc, alt, options, depth + 1)));
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (depth > 6) return fc.constant(null);
  switch (s.type) {
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: Math.max(SMALL_INT.min, numberOr(s.minimum, SMALL_INT.min)), max: Math.min(SMALL_INT.max, numberOr(s.maximum, SMALL_INT.max)) });
    case 'number':
      return fc.double({ min: SMALL_NUMBER.min, max: SMALL_NUMBER.max, noNaN: true });
    case 'string':
      return s.format === 'binary' ? fc.uint8Array({ maxLength: 64 }) : fc.string({ maxLength: 12 });
    case 'array':
      return fc.array(arbitraryFor(doc, (s.items as Schema) ?? {}, options, depth + 1), {
        minLength: numberOr(s.minItems, 0),
        maxLength: Math.max(numberOr(s.minItems, 0), 3),
      });
    case 'object':
    case undefined:
      return objectArbitrary(doc, s, options, depth);
    default:
      return anyJson;
  }
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

function objectArbitrary(doc: OpenApiDoc, s: Schema, options: ArbitraryOptions, depth: number): fc.Arbitrary<unknown> {
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  const names = Object.keys(properties);
  if (names.length === 0) {
    const extra = s.additionalProperties;
    if (extra === undefined || extra === false) return s.type === 'object' ? fc.constant({}) : anyJson;
    const values = extra === true ? anyJson : arbitraryFor(doc, extra as Schema, options, depth + 1);
    return fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), values, { maxKeys: 3 });
  }
  const required = new Set((s.required ?? []) as string[]);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const name of names) {
    model[name] = depth === 0 && options.overrides?.[name] ? options.overrides[name] : arbitraryFor(doc, properties[name], options, depth + 1);
  }
  const record = fc.record(model, { requiredKeys: names.filter((n) => required.has(n)) });
  if (depth > 0 || options.maxOptionalKeys === undefined) return record;
  const optional = names.filter((n) => !required.has(n));
  return fc.tuple(record, fc.subarray(optional, { maxLength: Math.min(optional.length, options.maxOptionalKeys) })).map(([value, kept]) => {
    const keep = new Set([...required, ...kept]);
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([key]) => keep.has(key)));
  });
}

/** One operation of the spec: its path (parameters filled in), method and request body schema. */
export interface SpecOperation {
  method: string;
  path: string;
  /** The JSON or multipart body schema; null when the operation takes none. */
  body: { contentType: 'application/json' | 'multipart/form-data'; schema: Schema } | null;
}

export function specOperations(doc: OpenApiDoc): SpecOperation[] {
  const out: SpecOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const content = ((op as { requestBody?: { content?: Record<string, { schema?: Schema }> } }).requestBody?.content) ?? {};
      const contentType = content['application/json'] ? 'application/json' : content['multipart/form-data'] ? 'multipart/form-data' : null;
      out.push({
        method: method.toUpperCase(),
        path: path.replace(/\{[^}]+\}/g, 'fuzz'),
        body: contentType ? { contentType, schema: content[contentType].schema ?? {} } : null,
      });
    }
  }
  return out;
}

/** The body schema's declared top-level properties (resolved), for placing hostile values. */
export function topProperties(doc: OpenApiDoc, schema: Schema): Record<string, Schema> {
  const s = resolve(doc, schema);
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alternatives?.length) return topProperties(doc, alternatives[0]);
  const props = (s.properties ?? {}) as Record<string, Schema>;
  return Object.fromEntries(Object.entries(props).map(([name, p]) => [name, resolve(doc, p)]));
}
