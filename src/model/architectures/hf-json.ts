// Small readers over a parsed config.json shared by the architecture descriptors.

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A numeric field reader that names the file and the key when a required value is missing. */
export function numberReader(json: Json, source: string): (key: string, fallback?: number) => number {
  return (key, fallback) => {
    const value = json[key];
    if (typeof value === 'number') return value;
    if (fallback !== undefined) return fallback;
    throw new Error(`${source}: config.json lacks ${key}`);
  };
}
