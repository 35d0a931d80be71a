// The MoE fields of a llama.cpp GGUF: `<arch>.expert_count`, `expert_used_count` and
// `expert_feed_forward_length` (qwen3moe; llama-architecture files such as Mixtral use
// feed_forward_length for the experts). A layer is a MoE layer when it has a router tensor
// (blk.N.ffn_gate_inp), as llama.cpp's loaders decide per layer.
import type { GgufFile } from '../gguf/gguf-file';
import type { DecoderArchConfig } from '../types';

/** llama.cpp's ffn_gate_inp: the router of a MoE layer. */
const ROUTER = /^blk\.(\d+)\.ffn_gate_inp\.weight$/;

/**
 * `num(key, fallback)` reads `<arch>.<key>`. llama.cpp renormalises the top-k weights of both
 * mixtral (llama) and qwen3moe files (build_moe_ffn's norm_w), so GGUF configs do unless the file
 * says otherwise with `<arch>.expert_weights_norm` (gguf-py's key; the project's writer sets it
 * false for a norm_topk_prob: false checkpoint, which llama.cpp's qwen3moe would renormalise).
 */
export function moeGgufFields(file: GgufFile, numLayers: number, feedForward: number, num: (key: string, fallback?: number) => number): Partial<DecoderArchConfig> {
  const experts = num('expert_count', 0);
  if (experts <= 0) return {};
  const routed = new Set(file.tensors.map((t) => ROUTER.exec(t.name)?.[1]).filter((l) => l !== undefined).map(Number));
  const denseLayers: number[] = [];
  for (let l = 0; l < numLayers; l++) if (!routed.has(l)) denseLayers.push(l);
  return {
    numExperts: experts,
    numExpertsPerToken: num('expert_used_count'),
    expertIntermediateSize: num('expert_feed_forward_length', feedForward),
    normTopKProb: file.metadata[`${String(file.metadata['general.architecture'])}.expert_weights_norm`] !== false,
    ...(denseLayers.length > 0 ? { denseLayers } : {}),
  };
}
