// Gemma 3's entry in the vision registry: the SigLIP tower and its prompt format, vLLM's
// Gemma3 processor's: each <start_of_image> the template leaves becomes
// "\n\n" <start_of_image> <image_soft_token> x N <end_of_image> "\n\n".
import type { Tokenizer } from '../../types';
import { imageProcessorConfigFromHf } from '../processor-config-hf';
import { readHfProcessorFiles } from '../load-processor-config';
import { requireTokenizer, specialTokenId } from '../prompt-tokens';
import { ggufProcessorWith, type VisionLoader } from '../vision-loader';
import type { ImagePromptFormat } from '../vision-model';
import { gemma3GgufVitConfig, gemma3HfVitConfig } from './gemma3-tower';
import { readGgufVitWeights } from './vit-weights-gguf';
import { readHfVitWeights } from './vit-weights-hf';
import { vitVisionModel } from './vit-vision-model';
import { PROJECTOR } from './vit-weights';

const BOI = '<start_of_image>';

function gemma3Prompt(tokenizer: Tokenizer, source: string, json: Record<string, unknown> = {}): ImagePromptFormat {
  const boi = specialTokenId(tokenizer, BOI, source, json.boi_token_index);
  const newlines = tokenizer.encode('\n\n', { addSpecialTokens: false });
  return {
    placeholderText: BOI,
    placeholderTokenId: boi,
    imageTokenId: specialTokenId(tokenizer, '<image_soft_token>', source, json.image_token_index),
    prefix: [...newlines, boi],
    suffix: [specialTokenId(tokenizer, '<end_of_image>', source, json.eoi_token_index), ...newlines],
  };
}

/** Transformers stores Gemma's norm gain w and multiplies by 1 + w; canonical is the factor. */
function addOneToSoftEmbNorm(name: string): ((values: Float32Array) => void) | null {
  if (name !== `${PROJECTOR}mm_soft_emb_norm.weight`) return null;
  return (values) => values.forEach((v, i) => (values[i] = v + 1));
}

export const gemma3Vision: VisionLoader = {
  hfModelTypes: ['gemma3'],
  ggufProjectors: ['gemma3'],
  fromHf: (ctx) => {
    const tower = gemma3HfVitConfig(ctx.configJson, ctx.textHiddenSize, ctx.dir);
    const files = readHfProcessorFiles(ctx.dir);
    return vitVisionModel({
      family: 'gemma3',
      source: ctx.dir,
      tower,
      processorWith: (kwargs) => imageProcessorConfigFromHf({ ...files, mmProcessorKwargs: kwargs }),
      kwargs: ctx.mmProcessorKwargs,
      prompt: gemma3Prompt(requireTokenizer(ctx.tokenizer, ctx.dir), ctx.dir, ctx.configJson),
      readWeights: () => readHfVitWeights(ctx.dir, tower, addOneToSoftEmbNorm),
      loadWeights: ctx.loadWeights,
    });
  },
  fromGguf: (ctx) => {
    const source = ctx.mmproj.path;
    const tower = gemma3GgufVitConfig(ctx.mmproj.metadata, source);
    return vitVisionModel({
      family: 'gemma3',
      source,
      tower,
      processorWith: (kwargs) => ggufProcessorWith(ctx.mmproj, kwargs),
      kwargs: ctx.mmProcessorKwargs,
      prompt: gemma3Prompt(requireTokenizer(ctx.tokenizer, source), source),
      readWeights: () => readGgufVitWeights(ctx.mmproj, tower),
      loadWeights: ctx.loadWeights,
    });
  },
};
