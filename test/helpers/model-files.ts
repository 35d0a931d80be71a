// Locates the shared test models (../shared/models relative to the repo root). A test that
// needs one gates itself with needs(path) (./needs.ts), which skips it visibly when it is absent.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LoadModelOptions } from '../../src/model/types';

// One level deeper where a bench script runs this file compiled, from dist/test/helpers.
const MODELS_DIR = [resolve(__dirname, '../../../shared/models'), resolve(__dirname, '../../../../shared/models')].find((dir) => existsSync(dir)) ?? resolve(__dirname, '../../../shared/models');

/** The path a shared model file has when it is there (gate the test on it with needs()). */
export function sharedModel(file: string): string {
  return resolve(MODELS_DIR, file);
}

/** LoadModelOptions with the server's defaults, overridden by `extra`. */
export function loadOptions(model: string | null, extra: Partial<LoadModelOptions> = {}): LoadModelOptions {
  return { model, loadFormat: 'auto', loadWeights: true, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto', ...extra };
}
