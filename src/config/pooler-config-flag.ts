// --pooler-config: vLLM's PoolerConfig as a JSON object on the command line.

import type { PoolerConfigFlag } from '../model/types';

/** --pooler-config: a JSON object with vLLM's PoolerConfig keys (unknown keys and wrong types are refused). */
export function parsePoolerConfig(text: string): PoolerConfigFlag {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`'${text}' is not JSON (expected e.g. '{"pooling_type": "MEAN", "normalize": true}')`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('must be a JSON object');
  const kinds: Record<keyof PoolerConfigFlag, 'string' | 'boolean' | 'positive integer'> = {
    pooling_type: 'string',
    normalize: 'boolean',
    dimensions: 'positive integer',
    enable_chunked_processing: 'boolean',
    max_embed_len: 'positive integer',
    use_activation: 'boolean',
  };
  for (const [key, v] of Object.entries(value)) {
    const kind = kinds[key as keyof PoolerConfigFlag];
    if (!kind) throw new Error(`unknown key '${key}' (known: ${Object.keys(kinds).join(', ')})`);
    const ok = kind === 'positive integer' ? Number.isInteger(v) && (v as number) > 0 : typeof v === kind;
    if (!ok) throw new Error(`'${key}' must be a ${kind}`);
  }
  return value;
}
