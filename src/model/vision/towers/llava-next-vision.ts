// LLaVA-NeXT's entry in the vision registry (LlavaNextForConditionalGeneration, or LLaVA-1.6's
// mmproj: an `mlp` file with grid pinpoints): LLaVA-1.5's CLIP tower, projector and <image>
// prompt, with anyres tiles (LlavaNextImageProcessor), the image_newline row-end vector and its
// own encoder that packs the tiles' rows. Both formats run transformers' algorithm.
import type { GgufFile } from '../../gguf/gguf-file';
import { SettingsReader } from '../settings-reader';
import { createLlavaNextEncoder } from './llava-next-encoder';
import { llavaGgufVitConfig, llavaHfVitConfig } from './llava-tower';
import { llavaPrompt } from './llava-vision';
import type { VitConfig } from './vit-config';
import { vitVisionLoader } from './vit-family';

function llavaNextHfVitConfig(json: Record<string, unknown>, textHiddenSize: number, source: string): VitConfig {
  const tower = llavaHfVitConfig(json, textHiddenSize, source);
  if (tower.select !== 'patches') new SettingsReader(json, `${source}: config.json`).fail('vision_feature_select_strategy', "'full' is not supported for LLaVA-NeXT (default)");
  return { ...tower, imageNewline: true };
}

function llavaNextGgufVitConfig(file: GgufFile): VitConfig {
  const tensors = new Map(file.tensors.map((t) => [t.name, t.ggmlShape]));
  if (!tensors.has('model.image_newline') && !tensors.has('v.image_newline')) {
    throw new Error(`${file.path}: model.image_newline is missing: LLaVA-NeXT ends each row of tiles with it`);
  }
  return { ...llavaGgufVitConfig(file.metadata, tensors, file.path), imageNewline: true };
}

export const llavaNextVision = vitVisionLoader({
  family: 'llava_next',
  hfModelTypes: ['llava_next'],
  ggufProjectors: ['mlp'],
  ggufAccepts: (file) => file.metadata['clip.vision.image_grid_pinpoints'] !== undefined,
  hfTower: llavaNextHfVitConfig,
  ggufTower: llavaNextGgufVitConfig,
  prompt: llavaPrompt,
  hfProcessorDefaults: (json) => ({ vision_feature_select_strategy: json.vision_feature_select_strategy }),
  createEncoder: createLlavaNextEncoder,
});
