// Request fields with a server-side default stay optional in generated clients. openapi-typescript
// (v7, default options) makes every property with a `default` required unless the schema sits
// inline under a requestBody, so referenced request schemas would demand every defaulted field.
// Schemas reachable from a request body therefore state their default in the description
// ("Default: `16`.", shown by Swagger UI and copied into generated doc comments) instead of in
// `default`; response schemas keep `default`.

import type { OpenAPIObject } from '@nestjs/swagger';
import { operationsOf } from './operation-conventions';
import { eachObject } from './schema-conventions';

type Json = Record<string, unknown>;

const SCHEMA_PREFIX = '#/components/schemas/';

/** Moves `default` into the description on every property of every schema a request body reaches. */
export function describeRequestDefaults(document: OpenAPIObject): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, unknown>;
  const seen = new Set<string>();
  const pending: unknown[] = operationsOf(document).map(({ operation }) => operation.requestBody);
  const describe = (node: Json): void => {
    const properties = node.properties as Record<string, Json> | undefined;
    if (!properties || typeof properties !== 'object') return;
    for (const property of Object.values(properties)) {
      if (!property || typeof property !== 'object' || !('default' in property)) continue;
      const stated = `Default: \`${JSON.stringify(property.default)}\`.`;
      property.description = typeof property.description === 'string' ? `${property.description} ${stated}` : stated;
      delete property.default;
    }
  };
  while (pending.length) {
    eachObject(pending.pop(), (node) => {
      describe(node);
      const name = typeof node.$ref === 'string' && node.$ref.startsWith(SCHEMA_PREFIX) ? node.$ref.slice(SCHEMA_PREFIX.length) : null;
      if (name === null || seen.has(name) || !(name in schemas)) return;
      seen.add(name);
      pending.push(schemas[name]);
    });
  }
}
