// Function tools as the TypeScript namespace harmony puts in the developer message
// (`namespace functions { // description \n type name = (_: {...}) => any; }`): JSON Schema
// properties become typed members with their descriptions, examples and defaults as comments,
// in the property order the request gave, as openai/harmony's encoder writes them.

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isEnum(schema: Json): boolean {
  return Array.isArray(schema.enum) && schema.enum.length > 0;
}

/** A default as harmony comments it: strings quoted unless the schema is an enum. */
function defaultText(schema: Json): string {
  const value = schema.default;
  if (typeof value === 'string') return isEnum(schema) ? value : `"${value}"`;
  return JSON.stringify(value);
}

function withNullable(type: string, schema: Json): string {
  return schema.nullable === true && !type.includes('null') ? `${type} | null` : type;
}

/** One variant line of a oneOf: ` | type // description default: x`. */
function variantLine(variant: Json, indent: string, skipDescription: string | null): string {
  let line = withNullable(schemaType(variant, `${indent}   `), variant);
  const comments: string[] = [];
  if (typeof variant.description === 'string' && variant.description !== skipDescription) comments.push(variant.description);
  if ('default' in variant) comments.push(`default: ${defaultText(variant)}`);
  if (comments.length > 0) line += ` // ${comments.join(' ')}`;
  return line;
}

function oneOfType(variants: Json[], indent: string): string {
  return variants.map((v) => `\n${indent} | ${variantLine(v, indent, null)}`).join('');
}

function objectType(schema: Json, indent: string): string {
  let out = typeof schema.description === 'string' ? `${indent}// ${schema.description}\n` : '';
  out += '{\n';
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const properties = isObject(schema.properties) ? schema.properties : {};
  for (const [key, raw] of Object.entries(properties)) {
    const prop = isObject(raw) ? raw : {};
    const optional = required.has(key) ? '' : '?';
    if (typeof prop.title === 'string') out += `${indent}// ${prop.title}\n${indent}//\n`;
    const variants = Array.isArray(prop.oneOf) ? prop.oneOf.filter(isObject) : null;
    const description = typeof prop.description === 'string' ? prop.description : null;
    if (!variants && description !== null) out += `${indent}// ${description}\n`;
    if (Array.isArray(prop.examples) && prop.examples.length > 0) {
      out += `${indent}// Examples:\n`;
      for (const example of prop.examples) if (typeof example === 'string') out += `${indent}// - "${example}"\n`;
    }
    if (variants) {
      // A oneOf property: its description above (once), each variant on its own line.
      const aboveDescription = description !== null && description !== variants[0]?.description ? description : null;
      if (aboveDescription !== null) out += `${indent}// ${aboveDescription}\n`;
      if ('default' in prop) out += `${indent}// default: ${defaultText(prop)}\n`;
      out += `${indent}${key}${optional}:\n`;
      variants.forEach((variant, i) => {
        const skip = i === 0 && aboveDescription !== null ? (variant.description as string | undefined) ?? null : description;
        out += `${indent} | ${variantLine(variant, indent, skip)}\n`;
      });
      out += `${indent},\n`;
      continue;
    }
    out += `${indent}${key}${optional}: ${withNullable(schemaType(prop, `${indent}    `), prop)},`;
    if ('default' in prop) out += ` // default: ${defaultText(prop)}`;
    out += '\n';
  }
  return `${out}${indent}}`;
}

/** The TypeScript type of a JSON Schema. */
export function schemaType(schema: Json, indent: string): string {
  if (Array.isArray(schema.oneOf)) return oneOfType(schema.oneOf.filter(isObject), indent);
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t): t is string => typeof t === 'string').map((t) => (t === 'integer' ? 'number' : t));
    if (types.length > 0) return types.join(' | ');
  }
  switch (schema.type) {
    case 'object':
      return objectType(schema, indent);
    case 'string': {
      const values = Array.isArray(schema.enum) ? schema.enum.filter((v): v is string => typeof v === 'string') : [];
      return values.length > 0 ? values.map((v) => `"${v}"`).join(' | ') : 'string';
    }
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return isObject(schema.items) ? `${schemaType(schema.items, indent)}[]` : 'Array<any>';
    default:
      return 'any';
  }
}

export interface HarmonyFunction {
  name: string;
  description: string;
  parameters: Json | null;
}

/** The `# Tools` section of the developer message for `functions`. */
export function functionsNamespace(functions: readonly HarmonyFunction[]): string {
  const lines = ['## functions\n', 'namespace functions {\n'];
  for (const fn of functions) {
    for (const line of fn.description.split('\n')) if (fn.description !== '') lines.push(`// ${line}`);
    const params = fn.parameters ? `_: ${schemaType(fn.parameters, '')}` : '';
    lines.push(`type ${fn.name} = (${params}) => any;\n`);
  }
  lines.push('} // namespace functions');
  return `# Tools\n\n${lines.join('\n')}`;
}
