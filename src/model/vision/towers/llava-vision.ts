// LLaVA-1.5's entry in the vision registry: the CLIP tower and vLLM's LLaVA prompt format, the
// <image> token (image_token_index) repeated once per row the projector returns.
import type { Tokenizer } from '../../types';
import { specialTokenId } from '../prompt-tokens';
import type { ImagePromptFormat } from '../vision-model';
import { llavaGgufVitConfig, llavaHfVitConfig } from './llava-tower';
import { vitVisionLoader } from './vit-family';

const IMAGE = '<image>';

export function llavaPrompt(tokenizer: Tokenizer, source: string, json: Record<string, unknown> = {}): ImagePromptFormat {
  const image = specialTokenId(tokenizer, IMAGE, source, json.image_token_index ?? json.image_token_id);
  return { placeholderText: IMAGE, placeholderTokenId: image, imageTokenId: image, prefix: [], suffix: [] };
}

export const llavaVision = vitVisionLoader({
  family: 'llava',
  hfModelTypes: ['llava'],
  ggufProjectors: ['mlp'],
  hfTower: llavaHfVitConfig,
  ggufTower: (file) => llavaGgufVitConfig(file.metadata, new Map(file.tensors.map((t) => [t.name, t.ggmlShape])), file.path),
  prompt: llavaPrompt,
  hfProcessorDefaults: (json) => ({ vision_feature_select_strategy: json.vision_feature_select_strategy }),
});
