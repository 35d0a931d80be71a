// ModelArchConfig from a Hugging Face config.json (LlamaConfig / MistralConfig / Qwen2Config fields).
import type { Architecture, ModelArchConfig } from '../types';

const MODEL_TYPES: Readonly<Record<string, Architecture>> = { llama: 'llama', mistral: 'llama', qwen2: 'qwen2' };

type Json = Record<string, unknown>;

export function hfArchConfig(json: Json, source: string, hasLmHead: boolean): ModelArchConfig {
  const modelType = json.model_type;
  const architecture = typeof modelType === 'string' ? MODEL_TYPES[modelType] : undefined;
  if (!architecture) {
    throw new Error(`${source}: model_type ${JSON.stringify(modelType)} is not supported (supported: ${Object.keys(MODEL_TYPES).join(', ')})`);
  }
  const num = (key: string, fallback?: number): number => {
    const value = json[key];
    if (typeof value === 'number') return value;
    if (fallback !== undefined) return fallback;
    throw new Error(`${source}: config.json lacks ${key}`);
  };
  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  // transformers >= 4.56 nests rope_theta/rope_type in rope_parameters.
  const ropeParameters = isObject(json.rope_parameters) ? json.rope_parameters : {};
  const ropeTheta = num('rope_theta', typeof ropeParameters.rope_theta === 'number' ? ropeParameters.rope_theta : 10000);
  return {
    architecture,
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads,
    numKvHeads: num('num_key_value_heads', numHeads),
    headDim: num('head_dim', hiddenSize / numHeads),
    vocabSize: num('vocab_size'),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta,
    ropeScaling: ropeScaling(json.rope_scaling ?? json.rope_parameters),
    maxPositionEmbeddings: contextLength(json, architecture, num('max_position_embeddings', 2048)),
    tieWordEmbeddings: typeof json.tie_word_embeddings === 'boolean' ? json.tie_word_embeddings : !hasLmHead,
    // Qwen2 always has q/k/v biases; llama has them when attention_bias is set.
    attentionBias: architecture === 'qwen2' || json.attention_bias === true,
  };
}

/** rope_scaling with `rope_type` (older configs call it `type`); null for none or 'default'. */
export function ropeScaling(value: unknown): Record<string, unknown> | null {
  if (!isObject(value)) return null;
  const { type, rope_theta: _theta, ...rest } = value;
  const ropeType = rest.rope_type ?? type;
  if (ropeType === undefined || ropeType === 'default') return null;
  return { ...rest, rope_type: ropeType };
}

/**
 * Full attention over a sliding-window model is exact only inside the window, so the usable
 * context is capped at the window (Mistral v0.1: 4096; Qwen2 only when use_sliding_window is on).
 */
function contextLength(json: Json, architecture: Architecture, maxPositions: number): number {
  const window = json.sliding_window;
  const windowed = architecture === 'qwen2' ? json.use_sliding_window === true : true;
  return windowed && typeof window === 'number' && window > 0 ? Math.min(window, maxPositions) : maxPositions;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
