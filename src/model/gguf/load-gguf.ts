// A GGUF file -> config, weights (optional) and the metadata the tokenizer and chat template need.
import type { ChatTemplateSources } from '../chat-template';
import type { ModelArchConfig, ModelWeights } from '../types';
import { readGgufFile, type GgufFile } from './gguf-file';
import { ggufArchConfig } from './gguf-config';
import { checkGgufTensors, loadGgufWeights, readRopeFreqFactors } from './gguf-weights';
import { checkDecoderWeights } from '../decoder-weights';
import { ggufTensorName } from './tensor-names';

export interface GgufModel {
  file: GgufFile;
  config: ModelArchConfig;
  weights: ModelWeights | null;
  /** tokenizer.chat_template, and the named variants in tokenizer.chat_template.<name>. */
  chatTemplates: ChatTemplateSources;
}

export async function loadGgufModel(path: string, opts: { loadWeights: boolean }): Promise<GgufModel> {
  const file = await readGgufFile(path);
  checkGgufTensors(file);
  const config = ggufArchConfig(file, readRopeFreqFactors(file));
  const shapes = new Map(file.tensors.map((t) => [t.name, [...t.ggmlShape].reverse()]));
  checkDecoderWeights(config, (name) => shapes.get(ggufTensorName(name)), path);
  const weights = opts.loadWeights ? loadGgufWeights(file, config) : null;
  return { file, config, weights, chatTemplates: ggufChatTemplates(file.metadata) };
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
