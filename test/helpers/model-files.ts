// Locates the shared test models (../shared/models relative to the repo root); tests skip loudly when absent.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LoadModelOptions } from '../../src/model/types';

const MODELS_DIR = resolve(__dirname, '../../../shared/models');

/** The path of a shared model file, or null (after a loud warning) when it is not there. */
export function sharedModel(file: string): string | null {
  const path = resolve(MODELS_DIR, file);
  if (existsSync(path)) return path;
  console.warn(`\n\n*** SKIPPING: test model ${path} is missing ***\n`);
  return null;
}

/** LoadModelOptions with the server's defaults, overridden by `extra`. */
export function loadOptions(model: string | null, extra: Partial<LoadModelOptions> = {}): LoadModelOptions {
  return { model, loadFormat: 'auto', loadWeights: true, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto', ...extra };
}
