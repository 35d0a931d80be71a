// Seeded random MoE decoders written as their checkpoints ship: an HF directory whose experts
// are one tensor each under the family's own names (mixtral: block_sparse_moe.gate and
// experts.{e}.w1 / w3 / w2; qwen3moe: mlp.gate and mlp.experts.{e}.{gate,up,down}_proj) and
// config.json with the family's keys. The GGUF conversion is write-decoder-files.ts's.
import { join } from 'node:path';
import { lazyRandomTensors } from '../../bench/random-llama';
import { writeSafetensors } from '../../src/model/hf/safetensors-writer';
import type { DecoderArchConfig } from '../../src/model/types';
import { hfConfigJson, writeDecoderHfDir } from './write-decoder-files';

export type MoeLayout = 'mixtral' | 'qwen3moe';

const STACK = /^(model\.layers\.\d+)\.mlp\.experts\.(gate|up|down)_proj\.weight$/;
const ROUTER = /^(model\.layers\.\d+)\.mlp\.gate\.weight$/;
const MIXTRAL_EXPERT_NAMES = { gate: 'w1', up: 'w3', down: 'w2' } as const;

/** The stored name of expert e's projection `proj` of layer `layer` ("model.layers.N"). */
function expertName(layout: MoeLayout, layer: string, e: number, proj: 'gate' | 'up' | 'down'): string {
  return layout === 'mixtral' ? `${layer}.block_sparse_moe.experts.${e}.${MIXTRAL_EXPERT_NAMES[proj]}.weight` : `${layer}.mlp.experts.${e}.${proj}_proj.weight`;
}

/** config.json of a Mixtral or Qwen3-MoE checkpoint of shape `c`. */
export function moeConfigJson(c: DecoderArchConfig, layout: MoeLayout, extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (layout === 'mixtral') {
    return hfConfigJson(c, {
      architectures: ['MixtralForCausalLM'],
      model_type: 'mixtral',
      intermediate_size: c.expertIntermediateSize,
      num_local_experts: c.numExperts,
      num_experts_per_tok: c.numExpertsPerToken,
      router_aux_loss_coef: 0.02,
      output_router_logits: false,
      sliding_window: null,
      ...extra,
    });
  }
  return hfConfigJson(c, {
    architectures: ['Qwen3MoeForCausalLM'],
    model_type: 'qwen3_moe',
    num_experts: c.numExperts,
    num_experts_per_tok: c.numExpertsPerToken,
    moe_intermediate_size: c.expertIntermediateSize,
    norm_topk_prob: c.normTopKProb,
    decoder_sparse_step: 1,
    mlp_only_layers: c.denseLayers ?? [],
    use_sliding_window: false,
    sliding_window: null,
    max_window_layers: c.numLayers,
    ...extra,
  });
}

/** Writes `config`'s seeded weights (reference: bench/random-llama.ts's stacks) as an HF directory in `layout`. */
export async function writeMoeHfDir(dir: string, config: DecoderArchConfig, layout: MoeLayout, seed: number, json = moeConfigJson(config, layout)): Promise<void> {
  await writeDecoderHfDir(dir, config, json, seed);
  const tensors = lazyRandomTensors(config, seed).flatMap(({ name, shape, values }) => {
    const stack = STACK.exec(name);
    const router = ROUTER.exec(name);
    if (router && layout === 'mixtral') return [{ name: `${router[1]}.block_sparse_moe.gate.weight`, tensor: { kind: 'f32' as const, shape, data: values() } }];
    if (!stack) return [{ name, tensor: { kind: 'f32' as const, shape, data: values() } }];
    const [experts, out, inp] = shape;
    const data = values();
    return Array.from({ length: experts }, (_, e) => ({
      name: expertName(layout, stack[1], e, stack[2] as 'gate' | 'up' | 'down'),
      tensor: { kind: 'f32' as const, shape: [out, inp], data: data.subarray(e * out * inp, (e + 1) * out * inp) },
    }));
  });
  writeSafetensors(join(dir, 'model.safetensors'), tensors, 'F32');
}
