// --hf-overrides (and vLLM's older --rope-theta / --rope-scaling): config.json keys applied over
// the model's config, for GGUF files and HF directories alike. Each architecture says which keys
// it accepts (its descriptor's overrideKeys: only keys that change how the graph is built);
// the derived context length follows them. Keys that change only how outputs are served
// (is_matryoshka, matryoshka_dimensions: vLLM's way to allow embeddings `dimensions`) apply to
// every model, over config.json as the pooling plan reads it.

import type { ArchitectureDescriptor } from './architectures/architecture';
import type { ModelArchConfig } from './types';

/** --hf-overrides keys that shape serving, not the graph, with the value each must have. */
const SERVING_KEYS: Record<string, { valid: (v: unknown) => boolean; expected: string }> = {
  is_matryoshka: { valid: (v) => typeof v === 'boolean', expected: 'true or false' },
  matryoshka_dimensions: {
    valid: (v) => Array.isArray(v) && v.length > 0 && v.every((d) => Number.isInteger(d) && (d as number) > 0),
    expected: 'a non-empty list of positive integers',
  },
};

/** The serving keys of `overrides`, checked, and the rest (for applyHfOverrides). */
export function splitServingOverrides(overrides: Record<string, unknown> | null | undefined): {
  serving: Record<string, unknown>;
  graph: Record<string, unknown> | null;
} {
  const serving: Record<string, unknown> = {};
  const graph: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(overrides ?? {})) {
    const rule = SERVING_KEYS[key];
    if (!rule) {
      graph[key] = value;
      continue;
    }
    if (!rule.valid(value)) throw new Error(`--hf-overrides: ${key} must be ${rule.expected}, got ${JSON.stringify(value)}`);
    serving[key] = value;
  }
  return { serving, graph: Object.keys(graph).length > 0 ? graph : null };
}

export function applyHfOverrides(
  descriptor: ArchitectureDescriptor,
  config: ModelArchConfig,
  overrides: Record<string, unknown> | null | undefined,
): ModelArchConfig {
  if (!overrides) return config;
  const supported = descriptor.overrideKeys ?? [];
  let out = config;
  for (const [key, value] of Object.entries(overrides)) {
    if (!supported.includes(key) || !descriptor.applyOverride) {
      const keys = [...supported, ...Object.keys(SERVING_KEYS)];
      throw new Error(`--hf-overrides: '${key}' is not applied here (supported for ${descriptor.name} models: ${keys.join(', ')})`);
    }
    try {
      out = descriptor.applyOverride(out, key, value);
    } catch (err) {
      throw new Error(`--hf-overrides: ${(err as Error).message}`);
    }
  }
  return out;
}
