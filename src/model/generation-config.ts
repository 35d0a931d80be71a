// generation_config.json -> sampling defaults and extra EOS ids, as vLLM's --generation-config:
// 'auto' reads the model directory's file, 'vllm' uses none, any other value is a folder to read it from.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile } from './hf/hf-tokenizer-files';
import type { GenerationDefaults } from './types';

export interface GenerationConfig {
  defaults: GenerationDefaults;
  eosTokenIds: number[];
}

/** The keys vLLM takes from generation_config.json as default sampling parameters. */
const DEFAULT_KEYS = ['temperature', 'top_p', 'top_k', 'min_p', 'repetition_penalty', 'max_new_tokens'] as const;

/**
 * vLLM reads the file through transformers' GenerationConfig.to_diff_dict(), which drops values equal
 * to transformers' own defaults; so e.g. a file's `top_k: 50` does not override vLLM's top_k.
 */
const TRANSFORMERS_DEFAULTS: Partial<Record<(typeof DEFAULT_KEYS)[number], number>> = {
  temperature: 1.0,
  top_p: 1.0,
  top_k: 50,
  repetition_penalty: 1.0,
};

/** `modelDir`: the model's directory, or null for a GGUF file / the dummy model (nothing to read for 'auto'). */
export function loadGenerationConfig(flag: string, modelDir: string | null): GenerationConfig {
  if (flag === 'vllm') return { defaults: {}, eosTokenIds: [] };
  let dir = modelDir;
  if (flag !== 'auto') {
    if (!existsSync(flag) || !statSync(flag).isDirectory()) {
      throw new Error(`--generation-config ${flag}: not 'auto', 'vllm' or an existing folder`);
    }
    dir = flag;
  }
  const json = dir === null ? null : readJsonFile(join(dir, 'generation_config.json'));
  // Like vLLM, a folder without the file means no defaults.
  return json ? parseGenerationConfig(json) : { defaults: {}, eosTokenIds: [] };
}

/**
 * --override-generation-config: vLLM merges these over the file's values (they count even when
 * equal to transformers' defaults). Only the keys vLLM takes as sampling defaults are accepted.
 */
export function applyGenerationOverrides(config: GenerationConfig, overrides: Record<string, unknown> | null | undefined): GenerationConfig {
  if (!overrides) return config;
  const defaults: GenerationDefaults = { ...config.defaults };
  for (const [key, value] of Object.entries(overrides)) {
    if (!(DEFAULT_KEYS as readonly string[]).includes(key)) {
      throw new Error(`--override-generation-config: '${key}' is not one of ${DEFAULT_KEYS.join(', ')}`);
    }
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`--override-generation-config: '${key}' must be a number`);
    defaults[key as (typeof DEFAULT_KEYS)[number]] = value;
  }
  return { ...config, defaults };
}

export function parseGenerationConfig(json: Record<string, unknown>): GenerationConfig {
  const defaults: GenerationDefaults = {};
  for (const key of DEFAULT_KEYS) {
    const value = json[key];
    if (typeof value === 'number' && Number.isFinite(value) && value !== TRANSFORMERS_DEFAULTS[key]) defaults[key] = value;
  }
  const eos = json.eos_token_id;
  const eosTokenIds = (Array.isArray(eos) ? eos : [eos]).filter((id): id is number => Number.isInteger(id) && (id as number) >= 0);
  return { defaults, eosTokenIds };
}
