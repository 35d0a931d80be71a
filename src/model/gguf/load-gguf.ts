// A GGUF file -> config, weights (optional) and the metadata the tokenizer and chat template need.
import type { ModelArchConfig, ModelWeights } from '../types';
import { readGgufFile, type GgufFile } from './gguf-file';
import { ggufArchConfig } from './gguf-config';
import { checkGgufTensors, loadGgufWeights, readRopeFreqFactors } from './gguf-weights';
import { checkModelWeights } from '../weight-specs';
import { ggufTensorName } from './tensor-names';

export interface GgufModel {
  file: GgufFile;
  config: ModelArchConfig;
  weights: ModelWeights | null;
  /** tokenizer.chat_template, when the file has one. */
  chatTemplate: string | null;
}

export async function loadGgufModel(path: string, opts: { loadWeights: boolean }): Promise<GgufModel> {
  const file = await readGgufFile(path);
  checkGgufTensors(file);
  const config = ggufArchConfig(file, readRopeFreqFactors(file));
  const shapes = new Map(file.tensors.map((t) => [t.name, [...t.ggmlShape].reverse()]));
  checkModelWeights(config, (name) => shapes.get(ggufTensorName(name)), path);
  const weights = opts.loadWeights ? loadGgufWeights(file, config) : null;
  const template = file.metadata['tokenizer.chat_template'];
  return { file, config, weights, chatTemplate: typeof template === 'string' ? template : null };
}
