// Locates the shared test models (../shared/models relative to the repo root); tests skip loudly when absent.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const MODELS_DIR = resolve(__dirname, '../../../shared/models');

/** The path of a shared model file, or null (after a loud warning) when it is not there. */
export function sharedModel(file: string): string | null {
  const path = resolve(MODELS_DIR, file);
  if (existsSync(path)) return path;
  console.warn(`\n\n*** SKIPPING: test model ${path} is missing ***\n`);
  return null;
}
