// loadModel: picks the loader from what MODEL points at (a .gguf file, a Hugging Face directory,
// or nothing / --load-format dummy) and assembles the LoadedModel the runner and the HTTP side use.
import { existsSync, readSync, statSync } from 'node:fs';
import { BUILTIN_CHAT_TEMPLATE, createChatTemplate, resolveChatTemplateSource, type ChatTemplateSources } from './chat-template';
import { DUMMY_CONFIG, dummyWeights } from './dummy/dummy-model';
import { applyHfOverrides } from './config-overrides';
import { applyGenerationOverrides, loadGenerationConfig } from './generation-config';
import { loadGgufModel } from './gguf/load-gguf';
import { hfChatTemplateSources, loadHfTokenizer, readTokenizerConfig } from './hf/hf-tokenizer-files';
import { loadHfModel } from './hf/load-hf';
import { withFile } from './read-fully';
import { createBuiltinTokenizer, createTokenizerFromGguf } from './tokenizer';
import type { ChatTemplate, LoadedModel, LoadModelOptions, ModelArchConfig, ModelWeights, Tokenizer } from './types';

const DUMMY_SOURCE = 'dummy';

/** What a format-specific loader hands back before the common assembly. */
interface LoadedParts {
  config: ModelArchConfig;
  weights: ModelWeights | null;
  onnxPath: string | null;
  tokenizer: Tokenizer | null;
  /** The model's own chat templates (used when --chat-template is not given). */
  templates: ChatTemplateSources;
  /** Where generation_config.json lives for --generation-config auto. */
  modelDir: string | null;
}

export async function loadModel(opts: LoadModelOptions): Promise<LoadedModel> {
  const source = opts.model === null || opts.loadFormat === 'dummy' ? DUMMY_SOURCE : opts.model;
  const parts = source === DUMMY_SOURCE ? loadDummy(opts) : await loadFromPath(source, opts);
  parts.config = applyHfOverrides(parts.config, opts.hfOverrides);
  if (opts.tokenizer && !opts.skipTokenizer) Object.assign(parts, await loadTokenizer(opts.tokenizer));

  const generation = applyGenerationOverrides(loadGenerationConfig(opts.generationConfig, parts.modelDir), opts.overrideGenerationConfig);
  const { tokenizer } = parts; // null when skipTokenizer: the loaders do not build one
  const eosTokenIds = [...new Set([...(tokenizer?.eosTokenId != null ? [tokenizer.eosTokenId] : []), ...generation.eosTokenIds])];
  return {
    source,
    config: parts.config,
    weights: parts.weights,
    onnxPath: parts.onnxPath,
    tokenizer,
    chatTemplate: tokenizer ? buildChatTemplate(chosenTemplates(opts.chatTemplate, parts.templates), tokenizer) : null,
    generationDefaults: generation.defaults,
    eosTokenIds,
    contextLength: derivedContextLength(parts.config),
  };
}

/**
 * vLLM's derived max_model_len: RoPE scaling that stretches positions (linear, dynamic, yarn)
 * multiplies the trained length by its factor (yarn from original_max_position_embeddings);
 * llama3 / longrope configs already state the extended length.
 */
export function derivedContextLength(config: ModelArchConfig): number {
  const scaling = config.ropeScaling;
  const factor = Number(scaling?.factor);
  if (!scaling || !(factor > 1) || !['linear', 'dynamic', 'yarn'].includes(String(scaling.rope_type))) {
    return config.maxPositionEmbeddings;
  }
  const original = scaling.original_max_position_embeddings;
  const base = scaling.rope_type === 'yarn' && typeof original === 'number' ? original : config.maxPositionEmbeddings;
  return Math.floor(base * factor);
}

function loadDummy(opts: LoadModelOptions): LoadedParts {
  return {
    config: DUMMY_CONFIG,
    weights: opts.loadWeights ? dummyWeights() : null,
    onnxPath: null,
    tokenizer: opts.skipTokenizer ? null : createBuiltinTokenizer(),
    templates: { default: BUILTIN_CHAT_TEMPLATE, named: {} },
    modelDir: null,
  };
}

async function loadFromPath(path: string, opts: LoadModelOptions): Promise<LoadedParts> {
  if (!existsSync(path)) throw new Error(`model path ${path} does not exist`);
  if (statSync(path).isDirectory()) {
    const hf = loadHfModel(path, { loadWeights: opts.loadWeights });
    const tokenizerConfig = readTokenizerConfig(path);
    return {
      ...hf,
      tokenizer: opts.skipTokenizer ? null : loadHfTokenizer(path, tokenizerConfig),
      templates: hfChatTemplateSources(path, tokenizerConfig),
      modelDir: path,
    };
  }
  if (!isGgufFile(path)) throw new Error(`model path ${path} is neither a GGUF file nor a Hugging Face model directory`);
  const gguf = await loadGgufModel(path, { loadWeights: opts.loadWeights });
  return {
    config: gguf.config,
    weights: gguf.weights,
    onnxPath: null,
    tokenizer: opts.skipTokenizer ? null : createTokenizerFromGguf(gguf.file.metadata),
    templates: gguf.chatTemplates,
    modelDir: null,
  };
}

/** --tokenizer: the tokenizer and its chat template from an HF directory or GGUF file. */
export async function loadTokenizer(path: string): Promise<{ tokenizer: Tokenizer; templates: ChatTemplateSources }> {
  if (!existsSync(path)) throw new Error(`--tokenizer ${path} does not exist`);
  if (statSync(path).isDirectory()) {
    const tokenizerConfig = readTokenizerConfig(path);
    return { tokenizer: loadHfTokenizer(path, tokenizerConfig), templates: hfChatTemplateSources(path, tokenizerConfig) };
  }
  if (!isGgufFile(path)) throw new Error(`--tokenizer ${path} is neither a GGUF file nor a Hugging Face directory`);
  const gguf = await loadGgufModel(path, { loadWeights: false });
  return { tokenizer: createTokenizerFromGguf(gguf.file.metadata), templates: gguf.chatTemplates };
}

/** By content, not extension: GGUF files start with the magic "GGUF". */
export function isGgufFile(path: string): boolean {
  return withFile(path, (fd) => {
    const magic = Buffer.alloc(4);
    readSync(fd, magic, 0, 4, 0);
    return magic.toString('latin1') === 'GGUF';
  });
}

/** --chat-template (a file, inline Jinja, or the name of one of the model's templates) replaces all of the model's. */
function chosenTemplates(flagValue: string | null, model: ChatTemplateSources): ChatTemplateSources {
  const given = resolveChatTemplateSource(flagValue, model.named);
  return given === null ? model : { default: given, named: {} };
}

function buildChatTemplate(sources: ChatTemplateSources, tokenizer: Tokenizer): ChatTemplate | null {
  const toolUse = sources.named.tool_use ?? null;
  if (sources.default === null && toolUse === null) return null;
  const pad = tokenizer.padTokenId === null ? null : tokenizer.idToToken(tokenizer.padTokenId);
  return createChatTemplate(
    { default: sources.default, toolUse },
    { bos_token: tokenizer.bosToken, eos_token: tokenizer.eosToken, pad_token: pad },
  );
}
