// loadModel: picks the loader from what MODEL points at (a .gguf file, a Hugging Face directory,
// or nothing / --load-format dummy), decides what the model is served as (model-plan.ts), and
// assembles the LoadedModel the runner and the HTTP side use.
import { existsSync, readSync, statSync } from 'node:fs';
import type { ArchitectureDescriptor } from './architectures/architecture';
import type { Json } from './architectures/hf-json';
import { architectureOf } from './architectures/registry';
import {
  BUILTIN_CHAT_TEMPLATE, createChatTemplate, createHarmonyChatTemplate, isHarmonyVocabulary, resolveChatTemplateSource, type ChatTemplateSources,
} from './chat-template';
import { whisperTinyConfig, whisperTinyTokenizer, whisperTinyWeights } from './dummy/builtin-whisper';
import { DUMMY_CONFIG, dummyWeights } from './dummy/dummy-model';
import { applyHfOverrides, splitServingOverrides } from './config-overrides';
import { applyGenerationOverrides, loadGenerationConfig } from './generation-config';
import { loadGgufModelWeights, readGgufModel } from './gguf/load-gguf';
import { hfChatTemplateSources, loadHfTokenizer, readTokenizerConfig } from './hf/hf-tokenizer-files';
import { loadHfModelWeights, readHfModel } from './hf/load-hf';
import { readSentenceTransformersConfig, type SentenceTransformersConfig } from './hf/sentence-transformers';
import { DEFAULT_SERVING_FLAGS, planModel, type ModelPlan } from './model-plan';
import { withFile } from './read-fully';
import { GGUF_KV_DTYPE, hfCheckpointKvDtype, type KvStorageDtype } from './runner/kv-dtype';
import { withoutSlidingWindow } from './sliding-window-off';
import { createBuiltinTokenizer, createTokenizerFromGguf, ggufEndOfGenerationIds } from './tokenizer';
import { loadVision, type VisionSource } from './vision/load-vision';
import type { ChatTemplate, DecoderArchConfig, LoadedModel, LoadModelOptions, ModelArchConfig, ModelOutput, ModelWeights, Tokenizer } from './types';

const DUMMY_SOURCE = 'dummy';

/** `--model builtin:<name>`: models that need no files (random weights; their output is noise). */
const BUILTIN_PREFIX = 'builtin:';
const BUILTIN_MODELS: Readonly<Record<string, () => OpenedModel>> = {
  llama: () => openDummy(),
  'whisper-tiny': () => openWhisperTiny(),
};

/** A model's metadata, read without its weights; the format-specific parts come as closures. */
interface OpenedModel {
  descriptor: ArchitectureDescriptor;
  config: ModelArchConfig;
  /** The longest context served whatever the config says (--disable-sliding-window: the window). */
  contextCap?: number;
  configJson: Json | null;
  sentenceTransformers: SentenceTransformersConfig | null;
  onnxPath: string | null;
  /** Checks the weights `output` needs (for `config`, overrides applied) are there; reads them when `read`. */
  weights(config: ModelArchConfig, output: ModelOutput, read: boolean): ModelWeights | null;
  tokenizer(): Tokenizer;
  /** The model's own chat templates (used when --chat-template is not given). */
  templates: ChatTemplateSources;
  /** Where generation_config.json lives for --generation-config auto. */
  modelDir: string | null;
  /** What --kv-cache-dtype auto stores (the model's data type); null = float32. */
  kvCacheAutoDtype: KvStorageDtype | null;
  /** Ids that end generation besides the tokenizer's EOS (a GGUF's end-of-turn tokens). */
  endOfGenerationIds?: () => number[];
  /** Where a vision tower may be (an HF directory, a GGUF's mmproj); absent: text only. */
  visionSource?: VisionSource;
}

export async function loadModel(opts: LoadModelOptions): Promise<LoadedModel> {
  const source = modelSource(opts);
  const opened = await openModel(source, opts);
  const plan = planFor(source, opened, opts);
  if (opened.onnxPath && plan.output.kind !== 'logits') {
    throw new Error(`${source}: an ONNX export is served for generation only; pooling needs safetensors weights`);
  }
  const weights = opened.weights(opened.config, plan.output, opts.loadWeights);
  const generation = applyGenerationOverrides(loadGenerationConfig(opts.generationConfig, opened.modelDir), opts.overrideGenerationConfig);
  // --tokenizer: another directory's or file's tokenizer and chat template.
  const replaced = opts.tokenizer && !opts.skipTokenizer ? await loadTokenizer(opts.tokenizer) : null;
  if (replaced) opened.templates = replaced.templates;
  const tokenizer = opts.skipTokenizer ? null : (replaced?.tokenizer ?? opened.tokenizer());
  const turnEnds = tokenizer && !replaced ? (opened.endOfGenerationIds?.() ?? []) : [];
  const eosTokenIds = [...new Set([...(tokenizer?.eosTokenId != null ? [tokenizer.eosTokenId] : []), ...generation.eosTokenIds, ...turnEnds])];
  const contextLength = Math.min(opened.descriptor.contextLength(opened.config), opened.contextCap ?? Infinity);
  const vision = opened.visionSource
    ? await loadVision(opened.visionSource, { textHiddenSize: opened.config.hiddenSize, tokenizer, loadWeights: opts.loadWeights, mmProcessorKwargs: opts.mmProcessorKwargs, mropeSection: (opened.config as DecoderArchConfig).mropeSection })
    : undefined;
  return {
    source,
    config: opened.config,
    output: plan.output,
    pooler: plan.pooler,
    weights,
    onnxPath: opened.onnxPath,
    tokenizer,
    chatTemplate: tokenizer ? modelChatTemplate(opts.chatTemplate, opened.templates, tokenizer) : null,
    generationDefaults: generation.defaults,
    eosTokenIds,
    contextLength: plan.maxSeqLength === null ? contextLength : Math.min(contextLength, plan.maxSeqLength),
    ...(opened.kvCacheAutoDtype ? { kvCacheAutoDtype: opened.kvCacheAutoDtype } : {}),
    ...(vision ? { vision } : {}),
  };
}

/**
 * What MODEL is served as, from its metadata alone (no weights, no tokenizer): the server
 * registers routes by it before the engine has loaded anything.
 */
export async function planServedModel(opts: LoadModelOptions): Promise<ModelPlan> {
  const source = modelSource(opts);
  return planFor(source, await openModel(source, opts), opts);
}

function modelSource(opts: LoadModelOptions): string {
  return opts.model === null || opts.loadFormat === 'dummy' ? DUMMY_SOURCE : opts.model;
}

function planFor(source: string, opened: OpenedModel, opts: LoadModelOptions): ModelPlan {
  return planModel({
    source,
    descriptor: opened.descriptor,
    config: opened.config,
    configJson: opened.configJson,
    sentenceTransformers: opened.sentenceTransformers,
    flags: opts.serving ?? DEFAULT_SERVING_FLAGS,
  });
}

/** The model's metadata, --hf-overrides applied to its config. */
async function openModel(source: string, opts: Pick<LoadModelOptions, 'hfOverrides' | 'disableSlidingWindow'>): Promise<OpenedModel> {
  const opened = await openModelFormat(source);
  const { serving, graph } = splitServingOverrides(opts.hfOverrides);
  opened.config = applyHfOverrides(opened.descriptor, opened.config, graph);
  if (opts.disableSlidingWindow) {
    const off = withoutSlidingWindow(opened.config);
    opened.config = off.config;
    if (off.contextCap !== null) opened.contextCap = off.contextCap;
  }
  if (Object.keys(serving).length > 0) opened.configJson = { ...(opened.configJson ?? {}), ...serving };
  return opened;
}

async function openModelFormat(source: string): Promise<OpenedModel> {
  if (source === DUMMY_SOURCE) return openDummy();
  if (source.startsWith(BUILTIN_PREFIX)) return openBuiltin(source);
  if (!existsSync(source)) throw new Error(`model path ${source} does not exist`);
  if (statSync(source).isDirectory()) return openHfDirectory(source);
  if (!isGgufFile(source)) throw new Error(`model path ${source} is neither a GGUF file nor a Hugging Face model directory`);
  return openGgufFile(source);
}

function openDummy(): OpenedModel {
  return {
    descriptor: architectureOf(DUMMY_CONFIG),
    config: DUMMY_CONFIG,
    configJson: null,
    sentenceTransformers: null,
    onnxPath: null,
    weights: (config, output, read) => (read ? dummyWeights(config as DecoderArchConfig, undefined, output) : null),
    tokenizer: createBuiltinTokenizer,
    templates: { default: BUILTIN_CHAT_TEMPLATE, named: {} },
    modelDir: null,
    kvCacheAutoDtype: null,
  };
}

function openBuiltin(source: string): OpenedModel {
  const open = BUILTIN_MODELS[source.slice(BUILTIN_PREFIX.length)];
  if (!open) throw new Error(`unknown built-in model ${source} (built-in: ${Object.keys(BUILTIN_MODELS).map((n) => BUILTIN_PREFIX + n).join(', ')})`);
  return open();
}

function openWhisperTiny(): OpenedModel {
  const config = whisperTinyConfig();
  return {
    descriptor: architectureOf(config),
    config,
    configJson: null,
    sentenceTransformers: null,
    onnxPath: null,
    weights: (_config, _output, read) => (read ? whisperTinyWeights(config) : null),
    tokenizer: whisperTinyTokenizer,
    templates: { default: null, named: {} },
    modelDir: null,
    kvCacheAutoDtype: null,
  };
}

function openHfDirectory(dir: string): OpenedModel {
  const info = readHfModel(dir);
  const tokenizerConfig = readTokenizerConfig(dir);
  return {
    descriptor: info.descriptor,
    config: info.config,
    configJson: info.configJson,
    sentenceTransformers: readSentenceTransformersConfig(dir),
    onnxPath: info.onnxPath,
    weights: (config, output, read) => loadHfModelWeights({ ...info, config }, output, read),
    tokenizer: () => loadHfTokenizer(dir, tokenizerConfig),
    templates: hfChatTemplateSources(dir, tokenizerConfig),
    modelDir: dir,
    kvCacheAutoDtype: hfCheckpointKvDtype(info.configJson),
    visionSource: { kind: 'hf', dir, configJson: info.configJson },
  };
}

async function openGgufFile(path: string): Promise<OpenedModel> {
  const gguf = await readGgufModel(path);
  return {
    descriptor: gguf.descriptor,
    config: gguf.config,
    configJson: null,
    sentenceTransformers: null,
    onnxPath: null,
    weights: (config, output, read) => loadGgufModelWeights({ ...gguf, config }, output, read),
    tokenizer: () => createTokenizerFromGguf(gguf.file.metadata),
    templates: gguf.chatTemplates,
    modelDir: null,
    kvCacheAutoDtype: GGUF_KV_DTYPE,
    endOfGenerationIds: () => ggufEndOfGenerationIds(gguf.file.metadata),
    visionSource: { kind: 'gguf', path },
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
  const gguf = await readGgufModel(path);
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

/** gpt-oss vocabularies render harmony (as vLLM does for them) unless --chat-template names a template. */
function modelChatTemplate(flagValue: string | null, model: ChatTemplateSources, tokenizer: Tokenizer): ChatTemplate | null {
  if (flagValue === null && isHarmonyVocabulary(tokenizer)) return createHarmonyChatTemplate();
  return buildChatTemplate(chosenTemplates(flagValue, model), tokenizer);
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
