// The names of a llama/qwen2 checkpoint's linears, as the native backends read them.
import { isMoeLayer, moeWeightNames } from '../../moe/moe-config';
import type { DecoderArchConfig, ModelWeights } from '../../types';

export const layerPrefix = (l: number) => `model.layers.${l}.`;

const ATTENTION_LINEARS = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj'];
const MLP_LINEARS = ['mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'];

/** The head's weight: lm_head where the model has its own, else the tied embedding. */
export function headName(c: { tieWordEmbeddings?: boolean }, weights: ModelWeights): string {
  return !c.tieWordEmbeddings && weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
}

type LinearShape = Pick<DecoderArchConfig, 'numLayers' | 'tieWordEmbeddings' | 'numExperts' | 'denseLayers'>;

/** The head's and every layer's linear weights (a MoE layer's expert stacks, not its float32 router). */
export function linearNames(c: LinearShape, weights: ModelWeights): string[] {
  const names = [headName(c, weights)];
  for (let l = 0; l < c.numLayers; l++) {
    const p = layerPrefix(l);
    names.push(...ATTENTION_LINEARS.map((n) => `${p}${n}.weight`));
    if (isMoeLayer(c, l)) {
      const moe = moeWeightNames(p);
      names.push(moe.gate, moe.up, moe.down);
    } else {
      names.push(...MLP_LINEARS.map((n) => `${p}${n}.weight`));
    }
  }
  return names;
}
