// A LoRA adapter's weights in the one layout every backend reads, whatever file they came from
// (a PEFT directory or a llama.cpp GGUF adapter: load-lora.ts). Per layer, per adapted linear,
// the low-rank pair of W' = W + scaling · B · A, with B already multiplied by the scaling so a
// backend adds (x Aᵀ) Bᵀ to the base linear's output and nothing else.

/** The linears an adapter may adapt, in the base model's canonical (Hugging Face) names. Fused
 * checkpoints' qkv_proj / gate_up_proj are split into these at load. */
export const LORA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraModule = (typeof LORA_MODULES)[number];

/** One adapted linear: Δy = (x Aᵀ) Bᵀ. */
export interface LoraPair {
  /** A, [rank, inFeatures] row-major. */
  a: Float32Array;
  /** scaling · B, [outFeatures, rank] row-major. */
  b: Float32Array;
  rank: number;
  inFeatures: number;
  outFeatures: number;
}

export interface LoraWeights {
  /** The adapter's rank r (every pair has it). */
  rank: number;
  alpha: number;
  /** alpha / r, or alpha / sqrt(r) with use_rslora (already folded into every pair's b). */
  scaling: number;
  /** numLayers entries: the adapted linears of each layer (absent: not adapted). */
  layers: readonly ReadonlyMap<LoraModule, LoraPair>[];
  /** Bytes the pairs hold (what --max-cpu-loras' store keeps). */
  bytes: number;
}

/** What the server allows an adapter to be (--max-lora-rank, --lora-dtype). */
export interface LoraLimits {
  maxRank: number;
  /** 'auto': the base model's dtype. The pairs are rounded to this type, then held as float32. */
  dtype: 'auto' | 'float32' | 'float16' | 'bfloat16';
}

/** An adapter that cannot be served: its message says why (a 400 at load_lora_adapter, a failed start for --lora-modules). */
export class LoraLoadError extends Error {
  override readonly name = 'LoraLoadError';
}
