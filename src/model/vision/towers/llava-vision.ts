// LLaVA-1.5's entry in the vision registry: the CLIP tower and vLLM's LLaVA prompt format, the
// <image> token (image_token_index) repeated once per row the projector returns.
import type { Tokenizer } from '../../types';
import { imageProcessorConfigFromHf } from '../processor-config-hf';
import { readHfProcessorFiles } from '../load-processor-config';
import { requireTokenizer, specialTokenId } from '../prompt-tokens';
import { ggufProcessorWith, type VisionLoader } from '../vision-loader';
import type { ImagePromptFormat } from '../vision-model';
import { llavaGgufVitConfig, llavaHfVitConfig } from './llava-tower';
import { readGgufVitWeights } from './vit-weights-gguf';
import { readHfVitWeights } from './vit-weights-hf';
import { vitVisionModel } from './vit-vision-model';

const IMAGE = '<image>';

function llavaPrompt(tokenizer: Tokenizer, source: string, json: Record<string, unknown> = {}): ImagePromptFormat {
  const image = specialTokenId(tokenizer, IMAGE, source, json.image_token_index ?? json.image_token_id);
  return { placeholderText: IMAGE, placeholderTokenId: image, imageTokenId: image, prefix: [], suffix: [] };
}

export const llavaVision: VisionLoader = {
  hfModelTypes: ['llava'],
  ggufProjectors: ['mlp'],
  fromHf: (ctx) => {
    const tower = llavaHfVitConfig(ctx.configJson, ctx.textHiddenSize, ctx.dir);
    const files = readHfProcessorFiles(ctx.dir);
    return vitVisionModel({
      family: 'llava',
      source: ctx.dir,
      tower,
      processorWith: (kwargs) => imageProcessorConfigFromHf({ ...files, mmProcessorKwargs: kwargs }),
      kwargs: ctx.mmProcessorKwargs,
      prompt: llavaPrompt(requireTokenizer(ctx.tokenizer, ctx.dir), ctx.dir, ctx.configJson),
      readWeights: () => readHfVitWeights(ctx.dir, tower, () => null),
      loadWeights: ctx.loadWeights,
    });
  },
  fromGguf: (ctx) => {
    const source = ctx.mmproj.path;
    const tensors = new Map(ctx.mmproj.tensors.map((t) => [t.name, t.ggmlShape]));
    const tower = llavaGgufVitConfig(ctx.mmproj.metadata, tensors, source);
    return vitVisionModel({
      family: 'llava',
      source,
      tower,
      processorWith: (kwargs) => ggufProcessorWith(ctx.mmproj, kwargs),
      kwargs: ctx.mmProcessorKwargs,
      prompt: llavaPrompt(requireTokenizer(ctx.tokenizer, source), source),
      readWeights: () => readGgufVitWeights(ctx.mmproj, tower),
      loadWeights: ctx.loadWeights,
    });
  },
};
