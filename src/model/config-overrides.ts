// --hf-overrides (and vLLM's older --rope-theta / --rope-scaling): config.json keys applied over
// the model's config, for GGUF files and HF directories alike. Each architecture says which keys
// it accepts (its descriptor's overrideKeys: only keys that change how the graph is built);
// the derived context length follows them.

import type { ArchitectureDescriptor } from './architectures/architecture';
import type { ModelArchConfig } from './types';

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
      throw new Error(`--hf-overrides: '${key}' is not applied here (supported for ${descriptor.name} models: ${supported.length ? supported.join(', ') : 'none'})`);
    }
    try {
      out = descriptor.applyOverride(out, key, value);
    } catch (err) {
      throw new Error(`--hf-overrides: ${(err as Error).message}`);
    }
  }
  return out;
}
