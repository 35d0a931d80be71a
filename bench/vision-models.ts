// The models `npm run bench:vision` serves: seeded random vision-language models with towers at
// their published widths (Gemma 3's SigLIP-So400m at 896 px, LLaVA-1.5's CLIP ViT-L/14 at 336 px,
// Qwen2.5-VL-3B's window-attention ViT, fed 448 px images here) and a small text model, so that the
// tower dominates an image request. Written once as a GGUF text model plus an mmproj GGUF (the pair
// both servers load) and kept in .bench-cache/.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { QWEN_VL_VISION, writeQwenVlGguf } from '../test/helpers/qwen-vl-files';
import { writeVisionGguf, writeVisionHfDir, type VisionFamilyName, type VisionModelShape } from '../test/helpers/write-vision-models';
import { llamaConfig } from './random-llama';

export type MmprojType = 'f16' | 'f32';
// LLaVA-NeXT's tower is LLaVA-1.5's CLIP run once per tile: its figures are LLaVA's times the tiles.
export type BenchFamily = Exclude<VisionFamilyName, 'llava_next'> | 'qwen2.5vl';

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
  /** Qwen2.5-VL: windows of this many patches a side, every `fullEvery`-th layer attending fully; a gated MLP; 2 frames per patch. */
  window?: { patches: number; fullEvery: number };
}

export const TOWERS: Record<BenchFamily, TowerShape> = {
  gemma3: { imageSize: 896, patchSize: 14, hidden: 1152, mlp: 4304, heads: 16, fullLayers: 27, tokens: 256 },
  llava: { imageSize: 336, patchSize: 14, hidden: 1024, mlp: 4096, heads: 16, fullLayers: 23, tokens: 576 },
  'qwen2.5vl': { imageSize: 448, patchSize: 14, hidden: 1280, mlp: 3420, heads: 16, fullLayers: 32, tokens: 256, window: { patches: 8, fullEvery: 8 } },
};

/** The text model under both towers: small next to them (hidden 512, 4 layers), stories260K's vocabulary. */
const TEXT = { hidden_size: 512, intermediate_size: 2048, num_hidden_layers: 4, num_attention_heads: 8, num_key_value_heads: 4 };

function shapeOf(family: Exclude<BenchFamily, 'qwen2.5vl'>, layers: number): { shape: VisionModelShape; configOverrides: Record<string, unknown> } {
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

/** Layers attending fully in a `layers`-deep Qwen tower: the published ones (every 8th), else the last. */
function qwenFullLayers(layers: number): number[] {
  const published = Array.from({ length: layers }, (_, i) => i).filter((i) => i % 8 === 7);
  return published.length ? published : [layers - 1];
}

/** Qwen2.5-VL's pair, F32 throughout as the tests' writer writes it. */
async function writeQwen(dir: string, layers: number): Promise<string> {
  const text = llamaConfig({
    architecture: 'qwen2', attentionBias: true, hiddenSize: TEXT.hidden_size, intermediateSize: TEXT.intermediate_size, numLayers: TEXT.num_hidden_layers,
    numHeads: TEXT.num_attention_heads, numKvHeads: TEXT.num_key_value_heads, headDim: 64, vocabSize: 515, rmsNormEps: 1e-6, ropeTheta: 1000000,
    tieWordEmbeddings: false, maxPositionEmbeddings: 4096, mropeSection: [8, 12, 12],
  });
  const t = TOWERS['qwen2.5vl'];
  const vision = {
    ...QWEN_VL_VISION, depth: layers, hidden_size: t.hidden, intermediate_size: t.mlp, num_heads: t.heads, out_hidden_size: TEXT.hidden_size,
    fullatt_block_indexes: qwenFullLayers(layers),
  };
  return (await writeQwenVlGguf(dir, 11, { text, vision })).text;
}

/** The GGUF text model of the pair (its mmproj beside it: mmprojBeside), written on first use. */
export async function ensureVisionModel(family: BenchFamily, layers: number, mmprojType: MmprojType, cacheDir: string): Promise<string> {
  const type = family === 'qwen2.5vl' ? 'f32' : mmprojType;
  const dir = join(cacheDir, `vision-${family}-l${layers}-${type}`);
  const existing = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.gguf') && !f.startsWith('mmproj')) : undefined;
  if (existing) return join(dir, existing);
  const work = `${dir}.partial`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  let model: string;
  if (family === 'qwen2.5vl') {
    model = await writeQwen(join(work, 'gguf'), layers);
  } else {
    const { shape, configOverrides } = shapeOf(family, layers);
    const hfDir = join(work, 'hf');
    const written = await writeVisionHfDir(family, hfDir, { shape, configOverrides, seed: 11 });
    model = await writeVisionGguf(family, hfDir, join(work, 'gguf'), written, { matrixType: mmprojType });
  }
  renameSync(join(work, 'gguf'), dir);
  rmSync(work, { recursive: true, force: true });
  return join(dir, model.slice(dirname(model).length + 1));
}

/** The mmproj GGUF beside a text GGUF (the one file named mmproj*.gguf there). */
export function mmprojBeside(model: string): string {
  const dir = dirname(model);
  return join(dir, readdirSync(dir).find((f) => f.startsWith('mmproj') && f.endsWith('.gguf'))!);
}

/**
 * FLOPs of one image through `layers` tower layers and the projector (multiply-adds count 2): the
 * patch conv, per layer and patch 2(4d² + 2d·mlp) in the linears and 4·T·d in attention's QKᵀ and
 * AV; norms, softmax and activations are left out (a few %).
 */
export function towerFlops(family: BenchFamily, layers: number, textHidden = TEXT.hidden_size): number {
  const t = TOWERS[family];
  const patches = (t.imageSize / t.patchSize) ** 2 + (family === 'llava' ? 1 : 0);
  const d = t.hidden;
  const conv = 2 * patches * d * (t.window ? 2 : 1) * 3 * t.patchSize ** 2;
  const linears = patches * 2 * (4 * d * d + (t.window ? 3 : 2) * d * t.mlp);
  const attention = (span: number) => 4 * patches * span * d;
  let body = 0;
  for (let l = 0; l < layers; l++) {
    const full = !t.window || (family === 'qwen2.5vl' && qwenFullLayers(layers).includes(l));
    body += linears + attention(full ? patches : t.window!.patches ** 2);
  }
  const merged = 4 * d;
  const projector =
    family === 'gemma3' ? 2 * t.tokens * d * textHidden : family === 'llava' ? 2 * t.tokens * (d * textHidden + textHidden * textHidden) : 2 * t.tokens * (merged * merged + merged * textHidden);
  return conv + body + projector;
}
