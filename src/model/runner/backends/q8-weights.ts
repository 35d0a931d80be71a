// The Q8_0 linears of a llama/qwen2 decoder read for the native-q8 backend: every linear (QKV,
// o_proj, the MLP's gate_up and down, the head) as codes and scales for the addon's q8Pack, and the
// RMSNorms' weights. Whether they are all Q8_0 is the chooser's question (choose-backend.ts).
import { unpackGgml } from '../../graph/ggml-unpack';
import { checkLinear, concatArrays, elementCount, requireWeight, toF32 } from '../../graph/weights';
import { expertWeight } from '../../moe/expert-weights';
import { isMoeLayer, moeWeightNames } from '../../moe/moe-config';
import type { DecoderArchConfig, ModelWeights, WeightTensor } from '../../types';
import { headName, layerPrefix, linearNames } from './llama-weight-names';

/** A Q8_0 weight [n, k] as q8Pack takes it: codes q + 128 row-major, one scale per 32 codes. */
export interface Q8Weight {
  codes: Uint8Array;
  scales: Float32Array;
  n: number;
  k: number;
}

/** A Q8_0 weight packed for the addon's GEMM (NativeKernels.q8Pack), with its sizes. */
export interface PackedQ8 {
  packed: Uint8Array;
  n: number;
  k: number;
}

/**
 * Layer l's linears: q, k, v, o_proj, and the MLP: gate_up (gate rows, then up rows) and
 * down_proj, or a MoE layer's experts (each expert's gate_up and down) and its float32 router.
 */
export interface Q8Layer<W = Q8Weight> {
  q: W;
  k: W;
  v: W;
  o: W;
  mlp: { gateUp: W; down: W } | { experts: { gateUp: W; down: W }[]; router: Float32Array };
}

/** The RMSNorms' weights and epsilon: layer l's input and post-attention norms, the final one, and the optional ones. */
export interface RmsNorms {
  input: Float32Array[];
  post: Float32Array[];
  final: Float32Array;
  /** Layer l's per-head q and k norms [headDim] where the config has them (qkNorm). */
  qk: { q: Float32Array; k: Float32Array }[] | null;
  /**
   * Sandwich norms (gemma): layer l's MLP input norm (pre_feedforward_layernorm) and its output
   * norm (post_feedforward_layernorm); `post` then norms the attention output.
   */
  sandwich: { preMlp: Float32Array; postMlp: Float32Array }[] | null;
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
  return q8Of(names.map((name) => ({ name, t: requireWeight(weights, name) })), k, outs);
}

/** Expert e's weight of the stack `name`, as q8Of takes it. */
function expertPart(weights: ModelWeights, name: string, e: number): { name: string; t: WeightTensor } {
  const stack = requireWeight(weights, name);
  return { name: `${name} (expert ${e})`, t: expertWeight(stack, e) };
}

function q8Of(tensors: { name: string; t: WeightTensor }[], k: number, outs: number[]): Q8Weight {
  const parts = tensors.map(({ name, t }, i) => {
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
      mlp: isMoeLayer(c, l)
        ? moeLayer(c, weights, l)
        : {
            gateUp: q8Weight(weights, [`${layerPrefix(l)}mlp.gate_proj.weight`, `${layerPrefix(l)}mlp.up_proj.weight`], h, [inter, inter]),
            down: q8Weight(weights, [`${layerPrefix(l)}mlp.down_proj.weight`], inter, [h]),
          },
    }),
    head: () => q8Weight(weights, [headName(c, weights)], h, [c.vocabSize]),
    norms: {
      input: Array.from({ length: c.numLayers }, (_, l) => norm(`${layerPrefix(l)}input_layernorm.weight`)),
      post: Array.from({ length: c.numLayers }, (_, l) => norm(`${layerPrefix(l)}post_attention_layernorm.weight`)),
      final: norm('model.norm.weight'),
      sandwich: c.sandwichNorms
        ? Array.from({ length: c.numLayers }, (_, l) => ({ preMlp: norm(`${layerPrefix(l)}pre_feedforward_layernorm.weight`), postMlp: norm(`${layerPrefix(l)}post_feedforward_layernorm.weight`) }))
        : null,
      qk: c.qkNorm ? Array.from({ length: c.numLayers }, (_, l) => ({ q: norm(`${layerPrefix(l)}self_attn.q_norm.weight`), k: norm(`${layerPrefix(l)}self_attn.k_norm.weight`) })) : null,
      eps: c.rmsNormEps,
    },
  };
}

/** A MoE layer's experts (gate_up and down each) and its router, dequantized if it is stored quantized. */
function moeLayer(c: DecoderArchConfig, weights: ModelWeights, l: number): Extract<Q8Layer['mlp'], { experts: unknown }> {
  const names = moeWeightNames(layerPrefix(l));
  const h = c.hiddenSize;
  const ffn = c.expertIntermediateSize!;
  const router = requireWeight(weights, names.router);
  checkLinear(names.router, router, h, c.numExperts);
  const experts = Array.from({ length: c.numExperts! }, (_, e) => ({
    gateUp: q8Of([expertPart(weights, names.gate, e), expertPart(weights, names.up, e)], h, [ffn, ffn]),
    down: q8Of([expertPart(weights, names.down, e)], ffn, [h]),
  }));
  return { experts, router: toF32(router) };
}
