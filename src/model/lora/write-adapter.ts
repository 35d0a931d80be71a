// Seeded random LoRA adapters written as a PEFT directory or a llama.cpp GGUF adapter, holding the
// very same numbers, so tests and benches can check that both formats load (and serve) alike.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { architectureOf } from '../architectures/registry';
import { randomWeight } from '../dummy/random-weights';
import { reorderRopeRows } from '../gguf/rope-permute';
import { gv, writeGguf, type GgufTensorToWrite, type GgufWriteType } from '../gguf/writer';
import { writeSafetensors, type SafetensorsDtype } from '../hf/safetensors-writer';
import type { DecoderArchConfig } from '../types';
import type { StoredLoraPair } from './assemble-lora';
import { baseLinearShape, fusedParts } from './base-linears';
import type { LoraModule } from './lora-weights';
import { PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE } from './peft-adapter';

export interface RandomAdapterOptions {
  rank: number;
  alpha: number;
  seed: number;
  modules: readonly LoraModule[];
  /** Layers adapted; all when absent. */
  layers?: readonly number[];
  useRslora?: boolean;
  /** Store q/k/v as one qkv_proj pair and gate/up as gate_up_proj (phi3 checkpoints), A shared by the parts. */
  fused?: boolean;
}

/** Values uniform in ±0.1·√3 (std 0.1): large enough that an adapter visibly moves a small model's logits. */
const AMPLITUDE = 5;

/** The adapter's pairs as stored (B unscaled; PEFT names, q/k rows in Hugging Face order). */
export function randomLoraPairs(config: DecoderArchConfig, options: RandomAdapterOptions): StoredLoraPair[] {
  const layers = options.layers ?? Array.from({ length: config.numLayers }, (_, i) => i);
  const pairs: StoredLoraPair[] = [];
  for (const layer of layers) {
    for (const module of storedModules(options)) {
      const parts = fusedParts(config, module);
      const inFeatures = parts ? baseLinearShape(config, parts[0][0]).inFeatures : baseLinearShape(config, module as LoraModule).inFeatures;
      const outFeatures = parts ? parts.reduce((sum, [, rows]) => sum + rows, 0) : baseLinearShape(config, module as LoraModule).outFeatures;
      const name = `base_model.model.model.layers.${layer}.${moduleGroup(module)}.${module}`;
      const aShape = [options.rank, inFeatures];
      const bShape = [outFeatures, options.rank];
      pairs.push({ layer, module, a: randomValues(`${name}.lora_A.weight`, aShape, options.seed), aShape, b: randomValues(`${name}.lora_B.weight`, bShape, options.seed), bShape, name });
    }
  }
  return pairs;
}

/** adapter_config.json + adapter_model.safetensors in `dir`. */
export function writeRandomPeftAdapter(dir: string, config: DecoderArchConfig, options: RandomAdapterOptions, dtype: SafetensorsDtype = 'F32'): StoredLoraPair[] {
  const pairs = randomLoraPairs(config, options);
  mkdirSync(dir, { recursive: true });
  const adapterConfig = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    r: options.rank,
    lora_alpha: options.alpha,
    use_rslora: options.useRslora === true,
    target_modules: storedModules(options),
    bias: 'none',
    lora_dropout: 0,
    modules_to_save: null,
    ...(options.layers ? { layers_to_transform: options.layers } : {}),
  };
  writeFileSync(join(dir, PEFT_CONFIG_FILE), JSON.stringify(adapterConfig, null, 2));
  const tensors = pairs.flatMap((p) => [
    { name: `${p.name}.lora_A.weight`, tensor: { kind: 'f32' as const, shape: [...p.aShape], data: p.a } },
    { name: `${p.name}.lora_B.weight`, tensor: { kind: 'f32' as const, shape: [...p.bShape], data: p.b } },
  ]);
  writeSafetensors(join(dir, PEFT_WEIGHTS_FILE), tensors, dtype);
  return pairs;
}

/**
 * The same adapter as convert_lora_to_gguf.py would write it: GGUF names, q/k B rows interleaved
 * for families llama.cpp permutes, and alpha chosen so llama.cpp's alpha / r is the adapter's scaling.
 */
export function writeRandomGgufAdapter(file: string, config: DecoderArchConfig, options: RandomAdapterOptions, type: GgufWriteType = 'f32'): StoredLoraPair[] {
  const pairs = randomLoraPairs(config, options);
  const mapping = architectureOf(config).gguf;
  if (!mapping) throw new Error(`architecture ${config.architecture} has no GGUF form`);
  const alpha = options.useRslora ? options.alpha * Math.sqrt(options.rank) : options.alpha;
  const metadata = {
    'general.architecture': gv.str(mapping.architectures[0]),
    'general.type': gv.str('adapter'),
    'general.name': gv.str(`random LoRA r${options.rank} seed ${options.seed}`),
    'adapter.type': gv.str('lora'),
    'adapter.lora.alpha': gv.f32(alpha),
  };
  const tensors: GgufTensorToWrite[] = pairs.flatMap((p) => {
    const hfName = `model.layers.${p.layer}.${moduleGroup(p.module)}.${p.module}.weight`;
    const ggufName = mapping.ggufName(hfName);
    const b = new Float32Array(p.b);
    const heads = mapping.ropePermutedHeads(hfName, config);
    if (heads !== null) reorderRopeRows(new Uint8Array(b.buffer), heads, config.headDim, options.rank * 4, 'to-gguf');
    return [
      { name: `${ggufName}.lora_a`, shape: [...p.aShape], type, data: p.a },
      { name: `${ggufName}.lora_b`, shape: [...p.bShape], type, data: b },
    ];
  });
  writeGguf(file, metadata, tensors);
  return pairs;
}

function storedModules(options: RandomAdapterOptions): string[] {
  if (!options.fused) return [...options.modules];
  const fuse: Partial<Record<LoraModule, string>> = { q_proj: 'qkv_proj', k_proj: 'qkv_proj', v_proj: 'qkv_proj', gate_proj: 'gate_up_proj', up_proj: 'gate_up_proj' };
  return [...new Set(options.modules.map((m) => fuse[m] ?? m))];
}

function moduleGroup(module: string): string {
  return /^(q|k|v|o|qkv)_proj$/.test(module) ? 'self_attn' : 'mlp';
}

function randomValues(name: string, shape: number[], seed: number): Float32Array {
  const values = randomWeight({ name, shape, isNorm: false }, seed);
  for (let i = 0; i < values.length; i++) values[i] *= AMPLITUDE;
  return values;
}
