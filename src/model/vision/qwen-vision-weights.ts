// The tower's weights under their canonical names (transformers' without the `visual.` prefix)
// and shapes, which both loaders check against: the patch embedding is the Conv3d flattened to
// [hidden, 3 * T * p * p], a GEMM over the preprocessed rows.
import type { ModelWeights, WeightTensor } from '../types';
import { WeightMap } from '../weight-map';
import { patchColumns, type QwenVisionConfig } from './qwen-vision-config';

export const PATCH_EMBED = 'patch_embed.proj.weight';

/** Every canonical tensor of the tower and merger, with its shape. */
export function qwenVisionWeightShapes(config: QwenVisionConfig): Map<string, number[]> {
  const d = config.hiddenSize;
  const ffn = config.intermediateSize;
  const merged = d * config.spatialMergeSize * config.spatialMergeSize;
  const shapes = new Map<string, number[]>([[PATCH_EMBED, [d, patchColumns(config)]]]);
  const linear = (prefix: string, out: number, inp: number) => shapes.set(`${prefix}.weight`, [out, inp]).set(`${prefix}.bias`, [out]);
  for (let b = 0; b < config.depth; b++) {
    const p = `blocks.${b}`;
    shapes.set(`${p}.norm1.weight`, [d]).set(`${p}.norm2.weight`, [d]);
    linear(`${p}.attn.qkv`, 3 * d, d);
    linear(`${p}.attn.proj`, d, d);
    linear(`${p}.mlp.gate_proj`, ffn, d);
    linear(`${p}.mlp.up_proj`, ffn, d);
    linear(`${p}.mlp.down_proj`, d, ffn);
  }
  shapes.set('merger.ln_q.weight', [d]);
  linear('merger.mlp.0', merged, merged);
  linear('merger.mlp.2', config.outHiddenSize, merged);
  return shapes;
}

/**
 * The tower's weights from (canonical name, tensor) pairs, each checked against its shape (the
 * patch embedding may come as the Conv3d's [hidden, 3, T, p, p]); throws naming what is missing,
 * unexpected or misshapen.
 */
export function checkedQwenVisionWeights(config: QwenVisionConfig, tensors: Iterable<[string, WeightTensor]>, source: string): ModelWeights {
  const shapes = qwenVisionWeightShapes(config);
  const weights = new WeightMap();
  for (const [name, tensor] of tensors) {
    const want = shapes.get(name);
    if (!want) throw new Error(`${source}: tensor ${name} is not part of a Qwen2.5-VL vision tower`);
    const count = tensor.shape.reduce((a, b) => a * b, 1);
    const flattened = name === PATCH_EMBED && tensor.shape.length === 5 && count === want[0] * want[1] && tensor.shape[0] === want[0];
    if (!flattened && tensor.shape.join(',') !== want.join(',')) throw new Error(`${source}: tensor ${name} has shape [${tensor.shape.join(', ')}], expected [${want.join(', ')}]`);
    weights.set(name, { ...tensor, shape: want });
  }
  const missing = [...shapes.keys()].filter((name) => !weights.has(name));
  if (missing.length > 0) throw new Error(`${source}: the vision tower lacks ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}`);
  return weights;
}
