// The base model's linear that each LoRA module adapts: its [out, in] shape from the config, and
// whether the layer has it at all (a mixture-of-experts layer has experts, not one MLP).
import { isMoeLayer } from '../moe/moe-config';
import type { DecoderArchConfig } from '../types';
import { LoraLoadError, type LoraModule } from './lora-weights';

export interface LinearShape {
  inFeatures: number;
  outFeatures: number;
}

/** in/out features of `module` in every layer of `base`. */
export function baseLinearShape(base: DecoderArchConfig, module: LoraModule): LinearShape {
  const { hiddenSize: h, intermediateSize: ffn } = base;
  const q = base.numHeads * base.headDim;
  const kv = base.numKvHeads * base.headDim;
  switch (module) {
    case 'q_proj':
      return { inFeatures: h, outFeatures: q };
    case 'k_proj':
    case 'v_proj':
      return { inFeatures: h, outFeatures: kv };
    case 'o_proj':
      return { inFeatures: q, outFeatures: h };
    case 'gate_proj':
    case 'up_proj':
      return { inFeatures: h, outFeatures: ffn };
    case 'down_proj':
      return { inFeatures: ffn, outFeatures: h };
  }
}

const MLP_MODULES: ReadonlySet<LoraModule> = new Set(['gate_proj', 'up_proj', 'down_proj']);

/** Whether `module` is one of the MLP's linears (which a mixture-of-experts layer does not have). */
export function isMlpModule(module: LoraModule): boolean {
  return MLP_MODULES.has(module);
}

/** Throws when layer `layer` of `base` has no `module` linear to adapt. */
export function checkBaseHasLinear(base: DecoderArchConfig, layer: number, module: LoraModule, source: string): void {
  if (!Number.isInteger(layer) || layer < 0 || layer >= base.numLayers) {
    throw new LoraLoadError(`${source}: adapts layer ${layer}, but the base model has ${base.numLayers} layers (0..${base.numLayers - 1})`);
  }
  if (isMlpModule(module) && isMoeLayer(base, layer)) {
    throw new LoraLoadError(
      `${source}: adapts ${module} of layer ${layer}, a mixture-of-experts layer of the base model; LoRA on MoE experts is not supported (adapt the attention projections only)`,
    );
  }
}

/** Fused projections of phi3-style checkpoints: their output rows stack these modules, in order. */
export function fusedParts(base: DecoderArchConfig, fused: string): Array<[LoraModule, number]> | null {
  if (fused === 'qkv_proj') {
    const kv = base.numKvHeads * base.headDim;
    return [['q_proj', base.numHeads * base.headDim], ['k_proj', kv], ['v_proj', kv]];
  }
  if (fused === 'gate_up_proj') return [['gate_proj', base.intermediateSize], ['up_proj', base.intermediateSize]];
  return null;
}
