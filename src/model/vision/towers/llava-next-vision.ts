// LLaVA-NeXT's entry in the vision registry (LlavaNextForConditionalGeneration): LLaVA-1.5's CLIP
// tower, projector and <image> prompt, with anyres tiles (LlavaNextImageProcessor), the
// image_newline row-end vector and its own encoder that packs the tiles' rows. Hugging Face
// checkpoints only: llama.cpp's LLaVA-1.6 mmproj is an `mlp` file whose tiles llama.cpp
// neither unpads nor ends with newlines, so its rows cannot be transformers'.
import { SettingsReader } from '../settings-reader';
import { createLlavaNextEncoder } from './llava-next-encoder';
import { llavaHfVitConfig } from './llava-tower';
import { llavaPrompt } from './llava-vision';
import type { VitConfig } from './vit-config';
import { vitVisionLoader } from './vit-family';

function llavaNextHfVitConfig(json: Record<string, unknown>, textHiddenSize: number, source: string): VitConfig {
  const tower = llavaHfVitConfig(json, textHiddenSize, source);
  if (tower.select !== 'patches') new SettingsReader(json, `${source}: config.json`).fail('vision_feature_select_strategy', "'full' is not supported for LLaVA-NeXT (default)");
  return { ...tower, imageNewline: true };
}

export const llavaNextVision = vitVisionLoader({
  family: 'llava_next',
  hfModelTypes: ['llava_next'],
  ggufProjectors: [],
  hfTower: llavaNextHfVitConfig,
  ggufTower: (file) => {
    throw new Error(`${file.path}: LLaVA-NeXT is served from Hugging Face checkpoints only`);
  },
  prompt: llavaPrompt,
  hfProcessorDefaults: (json) => ({ vision_feature_select_strategy: json.vision_feature_select_strategy }),
  createEncoder: createLlavaNextEncoder,
});
