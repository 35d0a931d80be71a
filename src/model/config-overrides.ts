// --hf-overrides (and vLLM's older --rope-theta / --rope-scaling): config.json keys applied over
// the model's config, for GGUF files and HF directories alike. Only keys that change how this
// server builds the graph are accepted; the derived context length follows them.

import { ropeScaling } from './hf/hf-config';
import type { ModelArchConfig } from './types';

const APPLIERS: Record<string, (config: ModelArchConfig, value: unknown) => void> = {
  rope_theta: (config, value) => {
    if (typeof value !== 'number' || !(value > 0)) throw new Error('rope_theta must be a positive number');
    config.ropeTheta = value;
  },
  rope_scaling: (config, value) => {
    if (value !== null && (typeof value !== 'object' || Array.isArray(value))) throw new Error('rope_scaling must be a JSON object or null');
    config.ropeScaling = ropeScaling(value);
  },
  max_position_embeddings: (config, value) => {
    if (!Number.isInteger(value) || (value as number) < 1) throw new Error('max_position_embeddings must be a positive integer');
    config.maxPositionEmbeddings = value as number;
  },
};

export function applyHfOverrides(config: ModelArchConfig, overrides: Record<string, unknown> | null | undefined): ModelArchConfig {
  if (!overrides) return config;
  const out = { ...config };
  for (const [key, value] of Object.entries(overrides)) {
    const apply = APPLIERS[key];
    if (!apply) throw new Error(`--hf-overrides: '${key}' is not applied here (supported: ${Object.keys(APPLIERS).join(', ')})`);
    try {
      apply(out, value);
    } catch (err) {
      throw new Error(`--hf-overrides: ${(err as Error).message}`);
    }
  }
  return out;
}
