// A GGUF file -> config, weights (optional) and the metadata the tokenizer and chat template need.
// The architecture descriptor (found by general.architecture) maps metadata and tensor names.
import type { ArchitectureDescriptor, GgufMapping } from '../architectures/architecture';
import type { ChatTemplateSources } from '../chat-template';
import { architectureForGguf, checkWeightShapes } from '../architectures/registry';
import type { ModelArchConfig, ModelOutput, ModelWeights } from '../types';
import { readGgufFile, type GgufFile } from './gguf-file';
import { checkGgufTensors, loadGgufWeights, readRopeFreqFactors } from './gguf-weights';

export interface GgufModel {
  file: GgufFile;
  descriptor: ArchitectureDescriptor;
  config: ModelArchConfig;
  weights: ModelWeights | null;
  /** tokenizer.chat_template, and the named variants in tokenizer.chat_template.<name>. */
  chatTemplates: ChatTemplateSources;
}

/** Reads the header and config; weights are read by loadGgufModelWeights once the output is known. */
export async function readGgufModel(path: string): Promise<Omit<GgufModel, 'weights'>> {
  const file = await readGgufFile(path);
  const descriptor = architectureForGguf(file.metadata['general.architecture'], path);
  const mapping = ggufMapping(descriptor, path);
  checkGgufTensors(file, mapping);
  const config = mapping.config(file, readRopeFreqFactors(file));
  return { file, descriptor, config, chatTemplates: ggufChatTemplates(file.metadata) };
}

const TEMPLATE_KEY = 'tokenizer.chat_template';

/** llama.cpp stores a model's named templates as `tokenizer.chat_template.<name>`. */
function ggufChatTemplates(metadata: Record<string, unknown>): ChatTemplateSources {
  const named: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (key.startsWith(`${TEMPLATE_KEY}.`) && typeof value === 'string') named[key.slice(TEMPLATE_KEY.length + 1)] = value;
  }
  const fallback = metadata[TEMPLATE_KEY];
  return { default: typeof fallback === 'string' ? fallback : null, named };
}

/** Checks the file holds every weight `output` needs, then reads them when asked. */
export function loadGgufModelWeights(model: Omit<GgufModel, 'weights'>, output: ModelOutput, loadWeights: boolean): ModelWeights | null {
  const { file, descriptor, config } = model;
  const mapping = ggufMapping(descriptor, file.path);
  const shapes = new Map(file.tensors.map((t) => [t.name, [...t.ggmlShape].reverse()]));
  const specs = descriptor.weightSpecs(config, output);
  checkWeightShapes(specs, (name) => shapes.get(mapping.ggufName(name)), file.path);
  if (!loadWeights) return null;
  const weights = loadGgufWeights(file, config, mapping, new Set(specs.map((s) => s.name)));
  descriptor.unfuseWeights?.(config, weights);
  return weights;
}

export async function loadGgufModel(path: string, opts: { loadWeights: boolean; output?: ModelOutput }): Promise<GgufModel> {
  const model = await readGgufModel(path);
  return { ...model, weights: loadGgufModelWeights(model, opts.output ?? { kind: 'logits' }, opts.loadWeights) };
}

function ggufMapping(descriptor: ArchitectureDescriptor, path: string): GgufMapping<ModelArchConfig> {
  if (!descriptor.gguf) throw new Error(`${path}: ${descriptor.name} models are not read from GGUF files`);
  return descriptor.gguf;
}
