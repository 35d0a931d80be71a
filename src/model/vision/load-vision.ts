// Finds a model's vision side and builds its VisionModel: a Hugging Face directory whose
// config.json model_type is a vision-language family's, or a GGUF text model with an
// `mmproj*.gguf` in its directory (vLLM's rule; llama-server's --mmproj). One entry per family.
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readGgufFile } from '../gguf/gguf-file';
import type { Tokenizer } from '../types';
import { gemma3Vision } from './towers/gemma3-vision';
import { llavaNextVision } from './towers/llava-next-vision';
import { llavaVision } from './towers/llava-vision';
import { qwenVlVision } from './qwen-vl-entry';
import type { VisionLoader } from './vision-loader';
import type { VisionModel } from './vision-model';

// In order: the first entry that takes an mmproj reads it (LLaVA-NeXT's `mlp` files before LLaVA-1.5's).
const VISION_LOADERS: readonly VisionLoader[] = [
  gemma3Vision,
  llavaNextVision,
  llavaVision,
  qwenVlVision,
];

/** Where a model's vision side may be: its HF directory (with config.json) or its GGUF file. */
export type VisionSource = { kind: 'hf'; dir: string; configJson: Record<string, unknown> } | { kind: 'gguf'; path: string };

export interface LoadVisionOptions {
  textHiddenSize: number;
  tokenizer: Tokenizer | null;
  loadWeights: boolean;
  mmProcessorKwargs?: Record<string, unknown> | null;
  /** The text model's M-RoPE section (DecoderArchConfig.mropeSection). */
  mropeSection?: readonly [number, number, number];
}

/** The model's VisionModel, or undefined for a text-only model. */
export async function loadVision(source: VisionSource, opts: LoadVisionOptions): Promise<VisionModel | undefined> {
  const context = { textHiddenSize: opts.textHiddenSize, tokenizer: opts.tokenizer, loadWeights: opts.loadWeights, mmProcessorKwargs: opts.mmProcessorKwargs ?? {}, mropeSection: opts.mropeSection };
  if (source.kind === 'hf') {
    const loader = VISION_LOADERS.find((l) => l.hfModelTypes.includes(source.configJson.model_type as string));
    // A checkpoint without an image processor config is served as the text model it holds.
    if (!loader || !source.configJson.vision_config || !existsSync(join(source.dir, 'preprocessor_config.json'))) return undefined;
    return loader.fromHf({ ...context, dir: source.dir, configJson: source.configJson });
  }
  const path = findMmproj(source.path);
  if (!path) return undefined;
  const mmproj = await readGgufFile(path);
  const projector = mmproj.metadata['clip.vision.projector_type'] ?? mmproj.metadata['clip.projector_type'];
  const loader = VISION_LOADERS.find((l) => l.ggufProjectors.includes(projector as string) && (l.ggufAccepts?.(mmproj) ?? true));
  if (!loader) {
    const supported = [...new Set(VISION_LOADERS.flatMap((l) => l.ggufProjectors))].join(', ');
    throw new Error(`${path}: clip.projector_type ${JSON.stringify(projector)} is not a supported vision projector (${supported})`);
  }
  return loader.fromGguf({ ...context, mmproj });
}

/** The `mmproj*.gguf` beside a GGUF model; throws when there are several to choose from. */
export function findMmproj(modelPath: string): string | null {
  const dir = dirname(modelPath);
  const found = readdirSync(dir).filter((f) => /^mmproj.*\.gguf$/i.test(f) && f !== basename(modelPath));
  if (found.length > 1) throw new Error(`${dir}: several mmproj files (${found.join(', ')}); keep one beside the model`);
  return found.length === 1 ? join(dir, found[0]) : null;
}
