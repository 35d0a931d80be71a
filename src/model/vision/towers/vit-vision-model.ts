// The VisionModel of a ViT tower (Gemma 3, LLaVA): the tower checked against the processor's
// geometry, weights read when the loader reads weights, createEncoder building the graph from them.
import type { ModelWeights } from '../../types';
import { llavaPlaceholderTokens } from '../llava-preprocess';
import type { ImageProcessorConfig, VisionFamily } from '../processor-config';
import type { ImageEncoder, ImageEncoderOptions, ImagePromptFormat, VisionModel } from '../vision-model';
import { checkVitConfig, outputTokens, patchesPerSide, type VitConfig } from './vit-config';
import { createVitEncoder } from './vit-encoder';

export type VitEncoderFactory = (tower: VitConfig, weights: ModelWeights, opts: ImageEncoderOptions) => ImageEncoder;

export interface VitVisionParts {
  family: VisionFamily;
  source: string;
  tower: VitConfig;
  processorWith(kwargs: Record<string, unknown>): ImageProcessorConfig;
  /** --mm-processor-kwargs (applied to `processor`). */
  kwargs: Record<string, unknown>;
  prompt: ImagePromptFormat;
  /** Reads the weights (called only when the model is loaded with weights). */
  readWeights(): ModelWeights;
  loadWeights: boolean;
  /** The encoder around the tower (createVitEncoder's one image in, its rows out, where absent). */
  createEncoder?: VitEncoderFactory;
  /** VisionModel.bidirectionalImages. */
  bidirectionalImages?: boolean;
}

export function vitVisionModel(parts: VitVisionParts): VisionModel {
  const { tower, source } = parts;
  checkVitConfig(tower, source);
  const processor = parts.processorWith(parts.kwargs);
  checkProcessorFits(processor, parts.family, tower, source);
  const weights = parts.loadWeights ? parts.readWeights() : null;
  return {
    family: parts.family,
    source,
    processor,
    processorWith: (kwargs) => {
      const config = parts.processorWith(kwargs);
      checkProcessorFits(config, parts.family, tower, source);
      return config;
    },
    prompt: parts.prompt,
    ...(parts.bidirectionalImages ? { bidirectionalImages: true } : {}),
    weights,
    createEncoder: (opts) => {
      if (!weights) return Promise.reject(new Error(`${source}: the vision tower was loaded without weights`));
      return Promise.resolve((parts.createEncoder ?? createVitEncoder)(tower, weights, opts));
    },
  };
}

/** The processor must hand the tower its input size and expect the rows it returns. */
function checkProcessorFits(processor: ImageProcessorConfig, family: VisionFamily, tower: VitConfig, source: string): void {
  if (processor.family !== family) throw new Error(`${source}: a ${processor.family} image processor does not fit a ${family} model`);
  if (processor.family === 'qwen2_vl') throw new Error(`${source}: a ${processor.family} image processor does not fit a ViT tower`);
  if (processor.family === 'llava_next' && processor.patchSize !== tower.patchSize) {
    throw new Error(`${source}: the image processor counts ${processor.patchSize}-pixel patches, the vision tower's are ${tower.patchSize}`);
  }
  const size = processor.family === 'gemma3' ? processor.size : processor.cropSize;
  if (size.width !== tower.imageSize || size.height !== tower.imageSize) {
    throw new Error(`${source}: the image processor makes ${size.width}x${size.height} images, the vision tower takes ${tower.imageSize}x${tower.imageSize}`);
  }
  // LLaVA-NeXT's count varies per image; each tile is one CLIP patch grid.
  const tokens = processor.family === 'gemma3' ? processor.tokensPerImage : processor.family === 'llava' ? llavaPlaceholderTokens(processor) : patchesPerSide(tower) ** 2;
  if (tokens !== outputTokens(tower)) {
    throw new Error(`${source}: the image processor counts ${tokens} tokens per image, the vision tower returns ${outputTokens(tower)}`);
  }
}
