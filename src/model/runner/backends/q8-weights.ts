// The Q8_0 linears of a llama/qwen2 decoder read for the native-q8 backend: every linear (QKV,
// o_proj, the MLP's gate_up and down, the head) as codes and scales for the addon's q8Pack, and the
// RMSNorms' weights. Whether they are all Q8_0 is the chooser's question (choose-backend.ts).
import { unpackGgml } from '../../graph/ggml-unpack';
import { checkLinear, concatArrays, elementCount, requireWeight, toF32 } from '../../graph/weights';
import type { DecoderArchConfig, ModelWeights } from '../../types';
import { headName, layerPrefix, linearNames } from './llama-weight-names';

/** A Q8_0 weight [n, k] as q8Pack takes it: codes q + 128 row-major, one scale per 32 codes. */
export interface Q8Weight {
  codes: Uint8Array;
  scales: Float32Array;
  n: number;
  k: number;
}

/** Layer l's linears: q, k, v, o_proj, gate_up (gate rows, then up rows) and down_proj. */
export interface Q8Layer<W = Q8Weight> {
  q: W;
  k: W;
  v: W;
  o: W;
  gateUp: W;
  down: W;
}

/** The RMSNorms' weights and epsilon: layer l's input and post-attention norms, and the final one. */
export interface RmsNorms {
  input: Float32Array[];
  post: Float32Array[];
  final: Float32Array;
  /** Layer l's per-head q and k norms [headDim] where the config has them (qkNorm). */
  qk: { q: Float32Array; k: Float32Array }[] | null;
  eps: number;
}

/** The linears the runner runs in the addon (read from the weights when asked, to be packed and released), and the norms. */
export interface Q8Linears {
  layer(l: number): Q8Layer;
  head(): Q8Weight;
  norms: RmsNorms;
}

/** True when every linear the addon would take (the head included) is Q8_0. */
export function allLinearsQ8(c: DecoderArchConfig, weights: ModelWeights): boolean {
  return linearNames(c, weights).every((name) => {
    if (!weights.has(name)) return false;
    const t = weights.get(name);
    return t.kind === 'quantized' && t.format === 'q8_0';
  });
}

function q8Weight(weights: ModelWeights, names: string[], k: number, outs: number[]): Q8Weight {
  const parts = names.map((name, i) => {
    const t = requireWeight(weights, name);
    checkLinear(name, t, k, outs[i]);
    if (t.kind !== 'quantized' || t.format !== 'q8_0') throw new Error(`weight '${name}' is not Q8_0`);
    return unpackGgml('q8_0', t.data, elementCount(t.shape))!;
  });
  const n = outs.reduce((a, b) => a + b, 0);
  return {
    codes: concatArrays(parts.map((p) => p.codes), (len) => new Uint8Array(len)),
    scales: concatArrays(parts.map((p) => p.scales), (len) => new Float32Array(len)),
    n,
    k,
  };
}

/** The linears (each read when asked, to be packed and released) and the norms (read now). */
export function readQ8Linears(c: DecoderArchConfig, weights: ModelWeights): Q8Linears {
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const h = c.hiddenSize;
  const inter = c.intermediateSize;
  const norm = (name: string) => toF32(requireWeight(weights, name));
  return {
    layer: (l) => ({
      q: q8Weight(weights, [`${layerPrefix(l)}self_attn.q_proj.weight`], h, [qDim]),
      k: q8Weight(weights, [`${layerPrefix(l)}self_attn.k_proj.weight`], h, [kvDim]),
      v: q8Weight(weights, [`${layerPrefix(l)}self_attn.v_proj.weight`], h, [kvDim]),
      o: q8Weight(weights, [`${layerPrefix(l)}self_attn.o_proj.weight`], qDim, [h]),
      gateUp: q8Weight(weights, [`${layerPrefix(l)}mlp.gate_proj.weight`, `${layerPrefix(l)}mlp.up_proj.weight`], h, [inter, inter]),
      down: q8Weight(weights, [`${layerPrefix(l)}mlp.down_proj.weight`], inter, [h]),
    }),
    head: () => q8Weight(weights, [headName(c, weights)], h, [c.vocabSize]),
    norms: {
      input: Array.from({ length: c.numLayers }, (_, l) => norm(`${layerPrefix(l)}input_layernorm.weight`)),
      post: Array.from({ length: c.numLayers }, (_, l) => norm(`${layerPrefix(l)}post_attention_layernorm.weight`)),
      final: norm('model.norm.weight'),
      qk: c.qkNorm ? Array.from({ length: c.numLayers }, (_, l) => ({ q: norm(`${layerPrefix(l)}self_attn.q_norm.weight`), k: norm(`${layerPrefix(l)}self_attn.k_norm.weight`) })) : null,
      eps: c.rmsNormEps,
    },
  };
}
