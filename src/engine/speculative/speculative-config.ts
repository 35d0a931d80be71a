// --speculative-config (vLLM's SpeculativeConfig keys): which proposer drafts tokens, how many
// per step, and when speculation stands aside. Keys this engine does not honour are refused
// rather than ignored.

export type SpeculativeMethod = 'ngram' | 'draft_model';

export interface SpeculativeConfig {
  method: SpeculativeMethod;
  /** Tokens drafted per sequence and step (k). */
  numSpeculativeTokens: number;
  /** ngram: the longest and shortest suffix of the context looked up earlier in it. */
  promptLookupMax: number;
  promptLookupMin: number;
  /** draft_model: the draft model's path (a GGUF file or a Hugging Face directory). */
  model: string | null;
  /** Speculation stands aside in a step whose running sequences reach this many; null = never. */
  disableByBatchSize: number | null;
}

/** Keys read from the JSON; anything else is refused by name. */
const KNOWN_KEYS = new Set(['method', 'model', 'num_speculative_tokens', 'prompt_lookup_max', 'prompt_lookup_min', 'disable_by_batch_size']);

const METHODS: readonly SpeculativeMethod[] = ['ngram', 'draft_model'];

/** The most drafts one step verifies per sequence (the verification pass grows with k). */
export const MAX_SPECULATIVE_TOKENS = 32;

/** Parses and checks the flag's JSON; throws an Error whose message names the key at fault. */
export function parseSpeculativeConfig(text: string): SpeculativeConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`--speculative-config must be a JSON object: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('--speculative-config must be a JSON object');
  return normalizeSpeculativeConfig(raw as Record<string, unknown>);
}

export function normalizeSpeculativeConfig(raw: Record<string, unknown>): SpeculativeConfig {
  for (const key of Object.keys(raw)) {
    if (!KNOWN_KEYS.has(key)) {
      throw new Error(`--speculative-config: "${key}" is not supported here (supported: ${[...KNOWN_KEYS].join(', ')})`);
    }
  }
  const model = optionalString(raw, 'model');
  const method = inferMethod(raw.method, model);
  const k = optionalInt(raw, 'num_speculative_tokens', 1);
  if (k === null) throw new Error('--speculative-config: num_speculative_tokens must be given');
  if (k > MAX_SPECULATIVE_TOKENS) throw new Error(`--speculative-config: num_speculative_tokens (${k}) must be at most ${MAX_SPECULATIVE_TOKENS}`);
  let lookupMax = optionalInt(raw, 'prompt_lookup_max', 1);
  let lookupMin = optionalInt(raw, 'prompt_lookup_min', 1);
  // vLLM: with neither given both are 5; with one given the other matches it.
  if (lookupMax === null && lookupMin === null) lookupMax = lookupMin = 5;
  lookupMax ??= lookupMin!;
  lookupMin ??= lookupMax;
  if (lookupMin > lookupMax) throw new Error(`--speculative-config: prompt_lookup_min (${lookupMin}) must be <= prompt_lookup_max (${lookupMax})`);
  const disableByBatchSize = optionalInt(raw, 'disable_by_batch_size', 2);
  if (method === 'draft_model' && model === null) throw new Error('--speculative-config: method "draft_model" needs "model", the draft model\'s path');
  if (method !== 'draft_model' && model !== null && model !== method && model !== `[${method}]`) {
    throw new Error(`--speculative-config: "model" names a draft model, which method "${method}" does not use`);
  }
  return {
    method,
    numSpeculativeTokens: k,
    promptLookupMax: lookupMax,
    promptLookupMin: lookupMin,
    model: method === 'draft_model' ? model : null,
    disableByBatchSize,
  };
}

/** vLLM infers the method from `model` when it is absent: "ngram" / "[ngram]" or a draft model's path. */
function inferMethod(method: unknown, model: string | null): SpeculativeMethod {
  if (method === undefined || method === null) {
    if (model === null) throw new Error('--speculative-config: give "method" (ngram or draft_model) or "model"');
    const bare = model.replace(/^\[(.*)\]$/, '$1');
    return (METHODS as readonly string[]).includes(bare) && bare !== 'draft_model' ? (bare as SpeculativeMethod) : 'draft_model';
  }
  if (typeof method !== 'string' || !(METHODS as readonly string[]).includes(method)) {
    throw new Error(`--speculative-config: method must be one of ${METHODS.join(', ')}, got ${JSON.stringify(method)}`);
  }
  return method as SpeculativeMethod;
}

function optionalString(raw: Record<string, unknown>, key: string): string | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v === '') throw new Error(`--speculative-config: ${key} must be a non-empty string`);
  return v;
}

function optionalInt(raw: Record<string, unknown>, key: string, min: number): number | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new Error(`--speculative-config: ${key} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
}
