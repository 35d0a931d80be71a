// The models `npm run bench:vision` serves: seeded random vision-language models with towers at
// their published widths (Gemma 3's SigLIP-So400m at 896 px, LLaVA-1.5's CLIP ViT-L/14 at 336 px)
// and a small text model, so that the tower dominates an image request. Written once as a GGUF
// text model plus an mmproj GGUF (the pair both servers load) and kept in .bench-cache/.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeVisionGguf, writeVisionHfDir, type VisionFamilyName, type VisionModelShape } from '../test/helpers/write-vision-models';

export type MmprojType = 'f16' | 'f32';

export interface TowerShape {
  /** Image side in pixels and patch side. */
  imageSize: number;
  patchSize: number;
  hidden: number;
  mlp: number;
  heads: number;
  /** Layers the published tower runs per image (LLaVA: up to its feature layer, 23 of CLIP's 24). */
  fullLayers: number;
  /** Rows the projector hands the language model. */
  tokens: number;
}

export const TOWERS: Record<VisionFamilyName, TowerShape> = {
  gemma3: { imageSize: 896, patchSize: 14, hidden: 1152, mlp: 4304, heads: 16, fullLayers: 27, tokens: 256 },
  llava: { imageSize: 336, patchSize: 14, hidden: 1024, mlp: 4096, heads: 16, fullLayers: 23, tokens: 576 },
};

/** The text model under both towers: small next to them (hidden 512, 4 layers), stories260K's vocabulary. */
const TEXT = { hidden_size: 512, intermediate_size: 2048, num_hidden_layers: 4, num_attention_heads: 8, num_key_value_heads: 4 };

function shapeOf(family: VisionFamilyName, layers: number): { shape: VisionModelShape; configOverrides: Record<string, unknown> } {
  const t = TOWERS[family];
  const vision = { hidden_size: t.hidden, intermediate_size: t.mlp, num_attention_heads: t.heads, image_size: t.imageSize, patch_size: t.patchSize };
  if (family === 'gemma3') {
    const text = { ...TEXT, head_dim: 64, query_pre_attn_scalar: 64, max_position_embeddings: 4096, sliding_window: 512 };
    return { shape: { vision: { ...vision, num_hidden_layers: layers }, text }, configOverrides: { mm_tokens_per_image: t.tokens } };
  }
  // vision_feature_layer -2: the tower keeps one layer past the ones it runs (the converter drops it).
  const text = { ...TEXT, max_position_embeddings: 4096 };
  return { shape: { vision: { ...vision, num_hidden_layers: layers + 1, projection_dim: 768 }, text }, configOverrides: {} };
}

/** The GGUF text model of the pair (its mmproj is `mmproj-model.gguf` beside it), written on first use. */
export async function ensureVisionModel(family: VisionFamilyName, layers: number, mmprojType: MmprojType, cacheDir: string): Promise<string> {
  const dir = join(cacheDir, `vision-${family}-l${layers}-${mmprojType}`);
  const model = join(dir, 'model.gguf');
  if (existsSync(model)) return model;
  const work = `${dir}.partial`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const { shape, configOverrides } = shapeOf(family, layers);
  const hfDir = join(work, 'hf');
  const written = await writeVisionHfDir(family, hfDir, { shape, configOverrides, seed: 11 });
  await writeVisionGguf(family, hfDir, join(work, 'gguf'), written, { matrixType: mmprojType });
  renameSync(join(work, 'gguf'), dir);
  rmSync(work, { recursive: true, force: true });
  return model;
}

/**
 * FLOPs of one image through `layers` tower layers and the projector (multiply-adds count 2): the
 * patch conv, per layer and patch 2(4d² + 2d·mlp) in the linears and 4·T·d in attention's QKᵀ and
 * AV; norms, softmax and activations are left out (a few %).
 */
export function towerFlops(family: VisionFamilyName, layers: number, textHidden = TEXT.hidden_size): number {
  const t = TOWERS[family];
  const patches = (t.imageSize / t.patchSize) ** 2 + (family === 'llava' ? 1 : 0);
  const d = t.hidden;
  const conv = 2 * patches * d * 3 * t.patchSize ** 2;
  const layer = patches * (2 * (4 * d * d + 2 * d * t.mlp) + 4 * patches * d);
  const projector = family === 'gemma3' ? 2 * t.tokens * d * textHidden : 2 * t.tokens * (d * textHidden + textHidden * textHidden);
  return conv + layers * layer + projector;
}
