// A resolved ServerConfig split into the per-area configs its flags declare (vLLM's EngineArgs ->
// ModelConfig, CacheConfig, SchedulerConfig, ...), and the engine's and the model loader's
// options built from them, once per config.

import type { EngineOptions, LoraEngineOptions } from '../engine/types';
import { planServedModel } from '../model/load-model';
import type { ModelPlan } from '../model/model-plan';
import type { LoadModelOptions } from '../model/types';
import { CONFIG_AREAS, type ConfigArea } from './flag-declaration';
import { FLAGS } from './flags';
import { reportedModelName, type FlagKey, type ServerConfig } from './server-config';

type Flags = typeof FLAGS;
/** The flags of one area, e.g. AreaConfig<'cache'> holds blockSize, kvCacheDtype, ... */
export type AreaConfig<A extends ConfigArea> = { [K in FlagKey as Flags[K]['area'] extends A ? K : never]: ServerConfig[K] };
export type AreaConfigs = { [A in ConfigArea]: AreaConfig<A> };

export function areaConfigs(c: ServerConfig): AreaConfigs {
  const areas: Record<string, Record<string, unknown>> = Object.fromEntries(CONFIG_AREAS.map((area) => [area, {}]));
  for (const key of Object.keys(FLAGS) as FlagKey[]) areas[FLAGS[key].area][key] = c[key];
  return areas as unknown as AreaConfigs;
}

/** --rope-theta and --rope-scaling folded into --hf-overrides (null when none is given). */
function hfOverridesOf(model: AreaConfig<'model'>): Record<string, unknown> | null {
  const merged = {
    ...(model.ropeTheta !== null ? { rope_theta: model.ropeTheta } : {}),
    ...(model.ropeScaling !== null ? { rope_scaling: model.ropeScaling } : {}),
    ...(model.hfOverrides ?? {}),
  };
  return Object.keys(merged).length > 0 ? merged : null;
}

function loadModelOptionsOf({ model, load, frontend }: AreaConfigs): LoadModelOptions {
  return {
    model: model.model,
    loadFormat: load.loadFormat,
    loadWeights: true,
    skipTokenizer: model.skipTokenizerInit,
    chatTemplate: model.chatTemplate,
    generationConfig: model.generationConfig,
    overrideGenerationConfig: model.overrideGenerationConfig,
    tokenizer: model.tokenizer,
    hfOverrides: hfOverridesOf(model),
    disableSlidingWindow: model.disableSlidingWindow,
    mmProcessorKwargs: frontend.mmProcessorKwargs,
    serving: { runner: model.runner, convert: model.convert, poolerConfig: model.poolerConfig },
  };
}

/** vLLM's LoRAConfig: --max-cpu-loras defaults to --max-loras. */
function loraEngineOptionsOf(lora: AreaConfig<'lora'>): LoraEngineOptions {
  return { maxLoras: lora.maxLoras, maxRank: lora.maxLoraRank, maxCpuLoras: lora.maxCpuLoras ?? lora.maxLoras, dtype: lora.loraDtype };
}

function buildEngineOptions(c: ServerConfig): EngineOptions {
  const areas = areaConfigs(c);
  const { model, cache, scheduler, device, structuredOutputs, lora } = areas;
  return {
    load: loadModelOptionsOf(areas),
    modelName: reportedModelName(c),
    maxModelLen: model.maxModelLen,
    maxNumSeqs: scheduler.maxNumSeqs,
    maxNumBatchedTokens: scheduler.maxNumBatchedTokens,
    schedulingPolicy: scheduler.schedulingPolicy,
    kvCacheMemoryBytes: cache.kvCacheMemoryBytes,
    blockSize: cache.blockSize,
    enablePrefixCaching: cache.enablePrefixCaching,
    mmProcessorCacheBytes: Math.floor(cache.mmProcessorCacheGb * 2 ** 30),
    device: device.device,
    intraOpThreads: device.cpuThreads,
    useWorker: true,
    maxNumQueuedReqs: scheduler.maxNumQueuedReqs,
    tokenizerPoolSize: model.skipTokenizerInit ? 0 : c.tokenizerPoolSize,
    structuredOutputs: {
      disableAnyWhitespace: structuredOutputs.structuredOutputsConfig.disableAnyWhitespace,
      disableAdditionalProperties: structuredOutputs.structuredOutputsConfig.disableAdditionalProperties,
      maxWhitespace: structuredOutputs.structuredOutputsConfig.maxWhitespace,
    },
    structuredOutputsLimits: structuredOutputs.structuredOutputsLimits,
    dtype: model.dtype,
    seed: model.seed,
    gpuMemoryUtilization: cache.gpuMemoryUtilization,
    kvCacheDtype: cache.kvCacheDtype,
    numBlocksOverride: cache.numGpuBlocksOverride,
    partialPrefills: {
      maxNumPartialPrefills: scheduler.maxNumPartialPrefills,
      maxLongPartialPrefills: scheduler.maxLongPartialPrefills,
      longPrefillTokenThreshold: scheduler.longPrefillTokenThreshold,
    },
    ...(lora.enableLora ? { lora: loraEngineOptionsOf(lora) } : {}),
    ...(scheduler.speculativeConfig ? { speculative: scheduler.speculativeConfig } : {}),
    ...(cache.kvEventsConfig ? { kvEvents: cache.kvEventsConfig } : {}),
    ...(cache.kvTransferConfig ? { kvTransfer: cache.kvTransferConfig, serverHost: c.host } : {}),
  };
}

// A resolved config is not changed afterwards, so the routes' plan and the engine share one build.
const built = new WeakMap<ServerConfig, EngineOptions>();

/** The engine's options (the model loader's under `load`), built once per config. */
export function toEngineOptions(c: ServerConfig): EngineOptions {
  let options = built.get(c);
  if (!options) {
    options = buildEngineOptions(c);
    built.set(c, options);
  }
  return options;
}

export function toLoadModelOptions(c: ServerConfig): LoadModelOptions {
  return toEngineOptions(c).load;
}

/** What the configured model serves (output kind, pooler), from its metadata, before loading it. */
export function planServedModelOf(c: ServerConfig): Promise<ModelPlan> {
  return planServedModel(toLoadModelOptions(c));
}
