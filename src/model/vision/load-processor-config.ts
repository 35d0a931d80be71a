// Finds a model's image processor config on disk: a Hugging Face directory's
// preprocessor_config.json, with processor_config.json and config.json for the counts they
// hold, or a GGUF mmproj file. The loader calls this once per model; requests reuse the result.
import { join } from 'node:path';
import { readGgufFile } from '../gguf/gguf-file';
import { readJsonFile } from '../hf/hf-tokenizer-files';
import type { ImageProcessorConfig } from './processor-config';
import { imageProcessorConfigFromGguf, type GgufProcessorOptions } from './processor-config-gguf';
import { imageProcessorConfigFromHf, type HfProcessorFiles } from './processor-config-hf';

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** The directory's processor files, read once; imageProcessorConfigFromHf applies kwargs to them. */
export function readHfProcessorFiles(dir: string): Omit<HfProcessorFiles, 'mmProcessorKwargs'> {
  const preprocessor = readJsonFile(join(dir, 'preprocessor_config.json'));
  if (!preprocessor) throw new Error(`${dir}: no preprocessor_config.json, so images cannot be prepared for this model`);
  const config = readJsonFile(join(dir, 'config.json'));
  const vision = config?.vision_config as Record<string, unknown> | undefined;
  return {
    preprocessor,
    processor: readJsonFile(join(dir, 'processor_config.json')),
    visionPatchSize: positiveInteger(vision?.patch_size),
    mmTokensPerImage: positiveInteger(config?.mm_tokens_per_image),
    modelGridPinpoints: config?.image_grid_pinpoints,
    source: dir,
  };
}

export function loadHfImageProcessorConfig(dir: string, mmProcessorKwargs?: Record<string, unknown>): ImageProcessorConfig {
  return imageProcessorConfigFromHf({ ...readHfProcessorFiles(dir), mmProcessorKwargs });
}

export async function loadGgufImageProcessorConfig(mmprojPath: string, options: GgufProcessorOptions = {}): Promise<ImageProcessorConfig> {
  const file = await readGgufFile(mmprojPath);
  return imageProcessorConfigFromGguf(file.metadata, mmprojPath, options);
}
