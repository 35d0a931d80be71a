// Document-wide schema rules, applied after @nestjs/swagger built the document so that every DTO,
// present and future, follows them:
// - public names: a class's schema is named after the class without its `Dto` suffix
//   (CompletionRequestDto -> CompletionRequest), or by its @ApiSchema({ name }) where vLLM's
//   protocol name differs (UsageDto -> UsageInfo). Generated SDKs expose these names.
// - explicit nulls: OpenAPI 3.0.3 applies `nullable` only to the `type` beside it, so nullable
//   unions and nullable references get a null alternative instead (anyOf [..., null]).

import type { OpenAPIObject } from '@nestjs/swagger';

const IMPLEMENTATION_SUFFIX = /Dto$/;
const SCHEMA_PREFIX = '#/components/schemas/';

type Json = Record<string, unknown>;

/** Calls `visit` on every object in `value`, depth first, parents before children. */
export function eachObject(value: unknown, visit: (node: Json) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) eachObject(item, visit);
  } else if (value && typeof value === 'object') {
    visit(value as Json);
    for (const child of Object.values(value)) eachObject(child, visit);
  }
}

/** The name a schema is published under. */
export const publicSchemaName = (name: string): string => name.replace(IMPLEMENTATION_SUFFIX, '');

/** Renames `XDto` schemas to `X` and rewrites every reference; two classes may not end up with one name. */
export function usePublicSchemaNames(document: OpenAPIObject): void {
  const schemas = document.components?.schemas;
  if (!schemas) return;
  const renamed = new Map<string, string>();
  for (const name of Object.keys(schemas)) {
    const publicName = publicSchemaName(name);
    if (publicName === name) continue;
    if (publicName in schemas || [...renamed.values()].includes(publicName)) {
      throw new Error(`OpenAPI: schema ${name} would be published as ${publicName}, which another class already uses; give one an @ApiSchema({ name })`);
    }
    renamed.set(name, publicName);
  }
  document.components!.schemas = Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [renamed.get(name) ?? name, schema]));
  const rename = (ref: string): string => {
    const name = ref.startsWith(SCHEMA_PREFIX) ? ref.slice(SCHEMA_PREFIX.length) : null;
    return name !== null && renamed.has(name) ? SCHEMA_PREFIX + renamed.get(name)! : ref;
  };
  eachObject(document, (node) => {
    if (typeof node.$ref === 'string') node.$ref = rename(node.$ref);
    const mapping = (node.discriminator as { mapping?: Record<string, string> } | undefined)?.mapping;
    if (mapping) for (const key of Object.keys(mapping)) mapping[key] = rename(mapping[key]);
  });
}

/** Matches null only: OpenAPI 3.0 needs a `type` beside `nullable`, and the enum rules the object out. */
const NULL_ONLY = { type: 'object', nullable: true, enum: [null] };

/**
 * `nullable` where OpenAPI 3.0.3 does not apply it becomes an explicit null alternative: next to
 * oneOf/anyOf without a `type`, and on @nestjs/swagger's nullable reference
 * `{allOf: [{$ref}], type: 'object', nullable: true}`, which validators read as "never null".
 */
export function makeNullsExplicit(document: OpenAPIObject): void {
  eachObject(document, (node) => {
    if (node.nullable !== true) return;
    const union = (node.oneOf ?? node.anyOf) as Json[] | undefined;
    const allOf = node.allOf as Json[] | undefined;
    const reference = allOf?.length === 1 && typeof allOf[0].$ref === 'string' ? allOf[0] : undefined;
    if (union && !('type' in node)) {
      delete node.oneOf;
      node.anyOf = [...union, NULL_ONLY];
    } else if (reference) {
      delete node.allOf;
      delete node.type;
      node.anyOf = [reference, NULL_ONLY];
    } else {
      return;
    }
    delete node.nullable;
  });
}
