// The vision registry's entry of a ViT family (Gemma 3, LLaVA), from what differs per family: the
// tower's config from each format, the prompt format, stored-value conversions.
import type { GgufFile } from '../../gguf/gguf-file';
import type { Tokenizer } from '../../types';
import { readHfProcessorFiles } from '../load-processor-config';
import { imageProcessorConfigFromHf } from '../processor-config-hf';
import type { VisionFamily } from '../processor-config';
import { requireTokenizer } from '../prompt-tokens';
import { ggufProcessorWith, type VisionLoader } from '../vision-loader';
import type { ImagePromptFormat } from '../vision-model';
import type { VitConfig } from './vit-config';
import { vitVisionModel, type VitEncoderFactory } from './vit-vision-model';
import { readGgufVitWeights } from './vit-weights-gguf';
import { readHfVitWeights } from './vit-weights-hf';

type Json = Record<string, unknown>;

export interface VitFamily {
  family: VisionFamily;
  hfModelTypes: readonly string[];
  ggufProjectors: readonly string[];
  ggufAccepts?: (file: GgufFile) => boolean;
  hfTower(json: Json, textHiddenSize: number, source: string): VitConfig;
  ggufTower(file: GgufFile): VitConfig;
  /** `json`: config.json, whose token ids must agree with the tokenizer's (absent for GGUF). */
  prompt(tokenizer: Tokenizer, source: string, json?: Json): ImagePromptFormat;
  /** The conversion of a stored HF value to its canonical form, by canonical name. */
  hfAdjust?(name: string): ((values: Float32Array) => void) | null;
  /** processor_config.json settings config.json gives when the file does not (vLLM reads them from config.json). */
  hfProcessorDefaults?(json: Json): Json;
  /** The encoder around the tower, where one image is not one pass (LLaVA-NeXT's tiles). */
  createEncoder?: VitEncoderFactory;
  /** The language model attends an image's tokens in both directions (VisionModel.bidirectionalImages). */
  bidirectionalImages?: boolean;
}

export function vitVisionLoader(f: VitFamily): VisionLoader {
  return {
    hfModelTypes: f.hfModelTypes,
    ggufProjectors: f.ggufProjectors,
    ggufAccepts: f.ggufAccepts,
    fromHf: (ctx) => {
      const tower = f.hfTower(ctx.configJson, ctx.textHiddenSize, ctx.dir);
      checkTextWidth(tower, ctx.textHiddenSize, ctx.dir);
      const read = readHfProcessorFiles(ctx.dir);
      const files = { ...read, processor: { ...f.hfProcessorDefaults?.(ctx.configJson), ...read.processor } };
      return vitVisionModel({
        family: f.family,
        source: ctx.dir,
        tower,
        processorWith: (kwargs) => imageProcessorConfigFromHf({ ...files, mmProcessorKwargs: kwargs }),
        kwargs: ctx.mmProcessorKwargs,
        prompt: f.prompt(requireTokenizer(ctx.tokenizer, ctx.dir), ctx.dir, ctx.configJson),
        readWeights: () => readHfVitWeights(ctx.dir, tower, (name) => f.hfAdjust?.(name) ?? null),
        loadWeights: ctx.loadWeights,
        createEncoder: f.createEncoder,
        bidirectionalImages: f.bidirectionalImages,
      });
    },
    fromGguf: (ctx) => {
      const source = ctx.mmproj.path;
      const tower = f.ggufTower(ctx.mmproj);
      checkTextWidth(tower, ctx.textHiddenSize, source);
      return vitVisionModel({
        family: f.family,
        source,
        tower,
        processorWith: (kwargs) => ggufProcessorWith(ctx.mmproj, kwargs),
        kwargs: ctx.mmProcessorKwargs,
        prompt: f.prompt(requireTokenizer(ctx.tokenizer, source), source),
        readWeights: () => readGgufVitWeights(ctx.mmproj, tower),
        loadWeights: ctx.loadWeights,
        createEncoder: f.createEncoder,
        bidirectionalImages: f.bidirectionalImages,
      });
    },
  };
}

/** The projector's rows go into the text model's input: their widths must agree. */
function checkTextWidth(tower: VitConfig, textHiddenSize: number, source: string): void {
  if (tower.projector.textHiddenSize !== textHiddenSize) {
    throw new Error(`${source}: the vision projector makes rows of ${tower.projector.textHiddenSize}, the text model's hidden size is ${textHiddenSize}`);
  }
}
