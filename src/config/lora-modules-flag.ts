// --lora-modules: vLLM's LoRAModulePath list, each item `name=path` or a JSON object
// {"name", "path", "base_model_name"}; the flag may be repeated and takes several items.

/** One static adapter: served under `name`, loaded from `path` at start-up. */
export interface LoraModulePath {
  name: string;
  path: string;
  /** The served base model it reports as `parent` in /v1/models (absent: the first served name). */
  baseModelName?: string;
}

/** vLLM's --max-lora-rank choices (LoRAConfig's MaxLoRARanks). */
export const MAX_LORA_RANKS: readonly number[] = [1, 8, 16, 32, 64, 128, 256, 320, 512];
/** vLLM's --lora-dtype choices. */
export const LORA_DTYPES = ['auto', 'float16', 'bfloat16'] as const;
export type LoraDtypeFlag = (typeof LORA_DTYPES)[number];

const JSON_KEYS = new Set(['name', 'path', 'base_model_name']);

function fromJson(item: string): LoraModulePath {
  let value: unknown;
  try {
    value = JSON.parse(item);
  } catch {
    throw new Error(`Invalid JSON format for --lora-modules: ${item}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`Invalid JSON format for --lora-modules: ${item}`);
  const fields = value as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !JSON_KEYS.has(key));
  if (unknown.length > 0) throw new Error(`Invalid fields for --lora-modules: ${item} - unexpected keyword argument '${unknown[0]}'`);
  for (const key of ['name', 'path'] as const) {
    if (typeof fields[key] !== 'string' || fields[key] === '') throw new Error(`Invalid fields for --lora-modules: ${item} - '${key}' must be a non-empty string`);
  }
  const base = fields.base_model_name;
  if (base != null && typeof base !== 'string') throw new Error(`Invalid fields for --lora-modules: ${item} - 'base_model_name' must be a string`);
  return { name: fields.name as string, path: fields.path as string, ...(base ? { baseModelName: base } : {}) };
}

/** One item of --lora-modules, appended to the ones before it (commander hands the list so far). */
export function parseLoraModule(item: string, previous?: unknown): LoraModulePath[] {
  const list = Array.isArray(previous) ? (previous as LoraModulePath[]) : [];
  if (item === '') return list;
  // vLLM's rule: `name=path` unless the item has a comma (then it is JSON).
  if (item.includes('=') && !item.includes(',')) {
    const [name, path, ...rest] = item.split('=');
    if (rest.length > 0 || name === '' || path === '') throw new Error(`Invalid format for --lora-modules: ${item} (expected name=path or a JSON object)`);
    return [...list, { name, path }];
  }
  return [...list, fromJson(item)];
}
