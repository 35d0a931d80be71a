// The names of a llama/qwen2 checkpoint's linears, as the native backends read them.
import type { ModelWeights } from '../../types';

export const layerPrefix = (l: number) => `model.layers.${l}.`;

const LAYER_LINEARS = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'];

/** The head's weight: lm_head where the model has its own, else the tied embedding. */
export function headName(c: { tieWordEmbeddings?: boolean }, weights: ModelWeights): string {
  return !c.tieWordEmbeddings && weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
}

/** The head's and every layer's linear weights. */
export function linearNames(c: { numLayers: number; tieWordEmbeddings?: boolean }, weights: ModelWeights): string[] {
  const names = [headName(c, weights)];
  for (let l = 0; l < c.numLayers; l++) names.push(...LAYER_LINEARS.map((n) => `${layerPrefix(l)}${n}.weight`));
  return names;
}
