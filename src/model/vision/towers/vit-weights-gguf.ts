// The tower's and projector's tensors from a llama.cpp mmproj GGUF, under the canonical (Hugging
// Face) names: clip-impl.h's v.* / mm.* names. Files from llama.cpp's older converters store
// fc1 as ffn_down and fc2 as ffn_up; clip.cpp tells them apart by ffn_down's row length being
// the hidden size, and so does this. Layers past the ones the tower runs stay on disk.
import type { GgufFile } from '../../gguf/gguf-file';
import { readGgufTensorAsF32 } from '../../gguf/gguf-weights';
import { checkWeightShapes } from '../../architectures/registry';
import { WeightMap } from '../../weight-map';
import type { VitConfig } from './vit-config';
import { IMAGE_NEWLINE, layerPrefix, PROJECTOR, TOWER, vitWeightSpecs } from './vit-weights';

const FLOAT_TYPES = new Set([0, 1, 30]); // F32, F16, BF16

const GLOBAL_NAMES: Readonly<Record<string, string>> = {
  'v.patch_embd.weight': `${TOWER}embeddings.patch_embedding.weight`,
  'v.patch_embd.bias': `${TOWER}embeddings.patch_embedding.bias`,
  'v.position_embd.weight': `${TOWER}embeddings.position_embedding.weight`,
  'v.class_embd': `${TOWER}embeddings.class_embedding`,
  'v.pre_ln.weight': `${TOWER}pre_layrnorm.weight`,
  'v.pre_ln.bias': `${TOWER}pre_layrnorm.bias`,
  'v.post_ln.weight': `${TOWER}post_layernorm.weight`,
  'v.post_ln.bias': `${TOWER}post_layernorm.bias`,
  'mm.input_projection.weight': `${PROJECTOR}mm_input_projection_weight`,
  'mm.soft_emb_norm.weight': `${PROJECTOR}mm_soft_emb_norm.weight`,
  'mm.0.weight': `${PROJECTOR}linear_1.weight`,
  'mm.0.bias': `${PROJECTOR}linear_1.bias`,
  'mm.2.weight': `${PROJECTOR}linear_2.weight`,
  'mm.2.bias': `${PROJECTOR}linear_2.bias`,
  // LLaVA-1.6: the legacy converter's name, and clip-impl.h's.
  'model.image_newline': IMAGE_NEWLINE,
  'v.image_newline': IMAGE_NEWLINE,
};

const LAYER_NAMES: Readonly<Record<string, string>> = {
  ln1: 'layer_norm1',
  ln2: 'layer_norm2',
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_out: 'self_attn.out_proj',
  ffn_up: 'mlp.fc1',
  ffn_down: 'mlp.fc2',
};

/** The canonical name of an mmproj tensor, or null for a layer the tower does not run; throws for unknown names. */
function canonicalName(file: GgufFile, ggufName: string, c: VitConfig): string | null {
  if (GLOBAL_NAMES[ggufName]) return GLOBAL_NAMES[ggufName];
  const layer = /^v\.blk\.(\d+)\.([a-z_0-9]+)\.(weight|bias)$/.exec(ggufName);
  if (!layer || !LAYER_NAMES[layer[2]]) throw new Error(`${file.path}: tensor ${ggufName} is not part of a vision tower this server can run`);
  const index = Number(layer[1]);
  if (index >= c.numLayers) return null;
  let part = layer[2];
  if (part.startsWith('ffn_') && ffnSwapped(file, index, c)) part = part === 'ffn_up' ? 'ffn_down' : 'ffn_up';
  return `${layerPrefix(index)}${LAYER_NAMES[part]}.${layer[3]}`;
}

function ffnSwapped(file: GgufFile, layer: number, c: VitConfig): boolean {
  const down = file.tensors.find((t) => t.name === `v.blk.${layer}.ffn_down.weight`);
  return down !== undefined && down.ggmlShape[0] === c.hiddenSize;
}

export function readGgufVitWeights(file: GgufFile, c: VitConfig): WeightMap {
  const wanted = new Map<string, { name: string; shape: number[]; type: number }>();
  for (const tensor of file.tensors) {
    const name = canonicalName(file, tensor.name, c);
    if (name !== null) wanted.set(name, { name: tensor.name, shape: [...tensor.ggmlShape].reverse(), type: tensor.type });
  }
  const specs = vitWeightSpecs(c);
  checkWeightShapes(specs, (name) => wanted.get(name)?.shape, file.path);
  const known = new Set(specs.map((s) => s.name));
  const weights = new WeightMap();
  for (const [name, tensor] of wanted) {
    if (!known.has(name)) throw new Error(`${file.path}: tensor ${tensor.name} is not part of this ${c.projector.kind} vision tower`);
    if (!FLOAT_TYPES.has(tensor.type)) throw new Error(`${file.path}: tensor ${tensor.name} is quantized; mmproj towers load from F32, F16 or BF16 tensors only`);
    weights.set(name, { kind: 'f32', shape: tensor.shape, data: readGgufTensorAsF32(file, tensor.name)! });
  }
  return weights;
}
