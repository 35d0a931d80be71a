// The tower's and projector's weights under their canonical names: Hugging Face's
// (`vision_tower.vision_model.*`, `multi_modal_projector.*`, the older transformers layout), with
// Hugging Face's shapes (linears [out, in], the patch conv [hidden, 3, patch, patch]). Gemma's
// mm_soft_emb_norm is canonical as the factor it applies (1 + w), as llama.cpp's mmproj stores it.
import type { WeightSpec } from '../../architectures/architecture';
import { sequenceLength, type VitConfig } from './vit-config';

export const TOWER = 'vision_tower.vision_model.';
export const PROJECTOR = 'multi_modal_projector.';
/** LLaVA-NeXT's row-end vector, at the checkpoint's top level. */
export const IMAGE_NEWLINE = 'image_newline';

export const layerPrefix = (l: number): string => `${TOWER}encoder.layers.${l}.`;

const matrix = (name: string, shape: number[]): WeightSpec => ({ name, shape, isNorm: false });
const vector = (name: string, size: number): WeightSpec => ({ name, shape: [size], isNorm: false });

function layerNorm(prefix: string, size: number): WeightSpec[] {
  return [
    { name: `${prefix}.weight`, shape: [size], isNorm: true },
    { name: `${prefix}.bias`, shape: [size], isNorm: false, isNormBias: true },
  ];
}

function linear(prefix: string, out: number, inFeatures: number): WeightSpec[] {
  return [matrix(`${prefix}.weight`, [out, inFeatures]), vector(`${prefix}.bias`, out)];
}

/** Every weight the encoder reads, for `c`. */
export function vitWeightSpecs(c: VitConfig): WeightSpec[] {
  const d = c.hiddenSize;
  const specs: WeightSpec[] = [matrix(`${TOWER}embeddings.patch_embedding.weight`, [d, 3, c.patchSize, c.patchSize])];
  if (c.patchBias) specs.push(vector(`${TOWER}embeddings.patch_embedding.bias`, d));
  specs.push(matrix(`${TOWER}embeddings.position_embedding.weight`, [sequenceLength(c), d]));
  if (c.classToken) specs.push(vector(`${TOWER}embeddings.class_embedding`, d));
  if (c.preNorm) specs.push(...layerNorm(`${TOWER}pre_layrnorm`, d));
  for (let l = 0; l < c.numLayers; l++) {
    const p = layerPrefix(l);
    specs.push(...layerNorm(`${p}layer_norm1`, d), ...layerNorm(`${p}layer_norm2`, d));
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) specs.push(...linear(`${p}self_attn.${proj}`, d, d));
    specs.push(...linear(`${p}mlp.fc1`, c.intermediateSize, d), ...linear(`${p}mlp.fc2`, d, c.intermediateSize));
  }
  if (c.postNorm) specs.push(...layerNorm(`${TOWER}post_layernorm`, d));
  const text = c.projector.textHiddenSize;
  if (c.projector.kind === 'gemma3') {
    specs.push({ name: `${PROJECTOR}mm_soft_emb_norm.weight`, shape: [d], isNorm: true });
    specs.push(matrix(`${PROJECTOR}mm_input_projection_weight`, [d, text]));
  } else {
    specs.push(...linear(`${PROJECTOR}linear_1`, text, d), ...linear(`${PROJECTOR}linear_2`, text, text));
  }
  if (c.imageNewline) specs.push(vector(IMAGE_NEWLINE, text));
  return specs;
}
