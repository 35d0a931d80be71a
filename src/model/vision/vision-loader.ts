// What a family's entry in load-vision.ts gives: how to build its VisionModel from a Hugging Face
// directory (config.json model_type) or from an mmproj GGUF (clip.projector_type).
import type { GgufFile } from '../gguf/gguf-file';
import type { Tokenizer } from '../types';
import { imageProcessorConfigFromGguf } from './processor-config-gguf';
import type { ImageProcessorConfig } from './processor-config';
import { SettingsReader } from './settings-reader';
import type { VisionModel } from './vision-model';

interface VisionContext {
  /** The text model's hidden size: the projector's output width. */
  textHiddenSize: number;
  tokenizer: Tokenizer | null;
  loadWeights: boolean;
  /** --mm-processor-kwargs. */
  mmProcessorKwargs: Record<string, unknown>;
  /** The text model's M-RoPE section, where it has one (an mmproj cannot say it). */
  mropeSection?: readonly [number, number, number];
}

export interface HfVisionContext extends VisionContext {
  dir: string;
  configJson: Record<string, unknown>;
}

export interface GgufVisionContext extends VisionContext {
  mmproj: GgufFile;
}

export interface VisionLoader {
  /** config.json model_type values of the whole vision-language model. */
  hfModelTypes: readonly string[];
  /** clip.projector_type values of its mmproj files. */
  ggufProjectors: readonly string[];
  /** Of the files with those projectors, whether this family reads `file` (LLaVA-NeXT: an `mlp` file with grid pinpoints); all when absent. */
  ggufAccepts?: (file: GgufFile) => boolean;
  fromHf(ctx: HfVisionContext): VisionModel;
  fromGguf(ctx: GgufVisionContext): VisionModel;
}

/** An mmproj's processor with mm_processor_kwargs applied: only Qwen's min_pixels / max_pixels exist there. */
export function ggufProcessorWith(file: GgufFile, kwargs: Record<string, unknown>): ImageProcessorConfig {
  const reader = new SettingsReader(kwargs, `${file.path}: mm_processor_kwargs`);
  const minPixels = reader.has('min_pixels') ? reader.integer('min_pixels') : undefined;
  const maxPixels = reader.has('max_pixels') ? reader.integer('max_pixels') : undefined;
  reader.refuseUnread();
  return imageProcessorConfigFromGguf(file.metadata, file.path, { minPixels, maxPixels });
}
