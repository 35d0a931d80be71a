// JSON schemas that strain a grammar compiler: deep nesting, long `$ref` chains, many large
// enums. Shared by the grammar-isolation tests (unit and e2e).

/** `levels` objects nested through one required property each. */
export function deepSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'integer' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema }, required: ['a'] };
  return schema;
}

/** `levels` arrays nested as items (one JSON level each: deep schemas within a body's depth limit). */
export function deepArraySchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'integer' };
  for (let i = 0; i < levels; i++) schema = { type: 'array', items: schema, maxItems: 2 };
  return schema;
}

/** `$defs` d0 → d1 → … each an object whose property refers to the next. */
export function refChainSchema(length: number): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < length; i++) {
    defs[`d${i}`] = i + 1 < length ? { type: 'object', properties: { a: { $ref: `#/$defs/d${i + 1}` } }, required: ['a'] } : { type: 'integer' };
  }
  return { $defs: defs, $ref: '#/$defs/d0' };
}

/** An object of `fields` enum properties with `values` values each; `tag` makes it a distinct spec. */
export function enumsSchema(fields: number, values: number, tag: string): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let f = 0; f < fields; f++) properties[`${tag}_${f}`] = { enum: Array.from({ length: values }, (_, v) => `${tag}-${f}-${v}`) };
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

/** `anyOf` of `count` small objects told apart by a const name, as a forced tool choice builds: slow to compile (2,000: ~4 s). */
export function objectChoicesSchema(count: number, tag: string): Record<string, unknown> {
  const choices = Array.from({ length: count }, (_, i) => ({ type: 'object', properties: { name: { const: `${tag}_${i}` }, a: { type: 'string' } }, required: ['name', 'a'] }));
  return { anyOf: choices };
}
