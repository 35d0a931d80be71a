// fast-check arbitraries of JSON schemas for the grammar compiler: random small schemas (the
// keywords xgrammar reads), and the same wrapped to a given nesting depth or `$ref` chain length,
// so a test can place them exactly at a configured bound and one past it.

import fc from 'fast-check';

type Schema = Record<string, unknown>;

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/);

const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.record({ type: fc.constant('string'), maxLength: fc.integer({ min: 1, max: 12 }) }),
  fc.record({ type: fc.constant('integer'), minimum: fc.integer({ min: -50, max: 0 }), maximum: fc.integer({ min: 1, max: 50 }) }),
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc.record({ enum: fc.uniqueArray(name, { minLength: 1, maxLength: 40 }) }),
  fc.record({ type: fc.constant('string'), pattern: fc.constantFrom('^[a-z]{1,6}$', '^[0-9]{3}-[0-9]{2}$', '^(yes|no)$') }),
);

/** Random schemas at most `maxDepth` subschemas deep. */
export function jsonSchemaArbitrary(maxDepth: number): fc.Arbitrary<Schema> {
  const { node } = fc.letrec<{ node: Schema }>((tie) => ({
    node: fc.oneof(
      { maxDepth, depthIdentifier: 'schema' },
      leaf,
      fc.dictionary(name, tie('node'), { minKeys: 1, maxKeys: 3 }).map((properties) => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false })),
      fc.record({ type: fc.constant('array'), items: tie('node'), maxItems: fc.integer({ min: 1, max: 3 }) }),
      fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((anyOf) => ({ anyOf })),
    ),
  }));
  return node;
}

/** `inner` inside `levels` single-property objects. */
export function nestedIn(inner: Schema, levels: number): Schema {
  let schema = inner;
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { v: schema }, required: ['v'], additionalProperties: false };
  return schema;
}

/** `inner` at the end of a chain of `length` `$ref`s (aliases: no nesting added). */
export function behindRefs(inner: Schema, length: number): Schema {
  const defs: Record<string, Schema> = {};
  for (let i = 0; i < length; i++) defs[`r${i}`] = i + 1 < length ? { $ref: `#/$defs/r${i + 1}` } : inner;
  return length === 0 ? inner : { $defs: defs, $ref: '#/$defs/r0' };
}
