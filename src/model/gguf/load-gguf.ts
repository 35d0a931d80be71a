// A GGUF file -> config, weights (optional) and the metadata the tokenizer and chat template need.
// The architecture descriptor (found by general.architecture) maps metadata and tensor names.
import type { ArchitectureDescriptor, GgufMapping } from '../architectures/architecture';
import { architectureForGguf, checkWeightShapes } from '../architectures/registry';
import type { ModelArchConfig, ModelOutput, ModelWeights } from '../types';
import { readGgufFile, type GgufFile } from './gguf-file';
import { checkGgufTensors, loadGgufWeights, readRopeFreqFactors } from './gguf-weights';

export interface GgufModel {
  file: GgufFile;
  descriptor: ArchitectureDescriptor;
  config: ModelArchConfig;
  weights: ModelWeights | null;
  /** tokenizer.chat_template, when the file has one. */
  chatTemplate: string | null;
}

/** Reads the header and config; weights are read by loadGgufModelWeights once the output is known. */
export async function readGgufModel(path: string): Promise<Omit<GgufModel, 'weights'>> {
  const file = await readGgufFile(path);
  const descriptor = architectureForGguf(file.metadata['general.architecture'], path);
  const mapping = ggufMapping(descriptor, path);
  checkGgufTensors(file, mapping);
  const config = mapping.config(file, readRopeFreqFactors(file));
  const template = file.metadata['tokenizer.chat_template'];
  return { file, descriptor, config, chatTemplate: typeof template === 'string' ? template : null };
}

/** Checks the file holds every weight `output` needs, then reads them when asked. */
export function loadGgufModelWeights(model: Omit<GgufModel, 'weights'>, output: ModelOutput, loadWeights: boolean): ModelWeights | null {
  const { file, descriptor, config } = model;
  const mapping = ggufMapping(descriptor, file.path);
  const shapes = new Map(file.tensors.map((t) => [t.name, [...t.ggmlShape].reverse()]));
  const specs = descriptor.weightSpecs(config, output);
  checkWeightShapes(specs, (name) => shapes.get(mapping.ggufName(name)), file.path);
  return loadWeights ? loadGgufWeights(file, config, mapping, new Set(specs.map((s) => s.name))) : null;
}

export async function loadGgufModel(path: string, opts: { loadWeights: boolean; output?: ModelOutput }): Promise<GgufModel> {
  const model = await readGgufModel(path);
  return { ...model, weights: loadGgufModelWeights(model, opts.output ?? { kind: 'logits' }, opts.loadWeights) };
}

function ggufMapping(descriptor: ArchitectureDescriptor, path: string): GgufMapping<ModelArchConfig> {
  if (!descriptor.gguf) throw new Error(`${path}: ${descriptor.name} models are not read from GGUF files`);
  return descriptor.gguf;
}
