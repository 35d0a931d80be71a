// Qwen2.5-VL's image side from a Hugging Face directory (Qwen2_5_VLForConditionalGeneration):
// config.json's vision_config, the `visual.*` (or `model.visual.*`) tensors of its safetensors,
// preprocessor_config.json. The language model is the directory's qwen2 decoder
// (architectures/qwen-vl-text.ts), whose mrope_section the caller passes in.
import { join } from 'node:path';
import { readJsonFile } from '../hf/hf-tokenizer-files';
import { listSafetensors, readSafetensorsAsF32 } from '../hf/safetensors';
import type { ModelWeights, Tokenizer, WeightTensor } from '../types';
import { imageProcessorConfigFromHf } from './processor-config-hf';
import { qwenVisionConfigFromHf, type QwenVisionConfig } from './qwen-vision-config';
import { createQwenVisionEncoder } from './qwen-vision-encoder';
import { checkedQwenVisionWeights } from './qwen-vision-weights';
import { qwenVlMrope, qwenVlPromptFormat } from './qwen-vl-prompt';
import type { VisionModel } from './vision-model';

export interface QwenVlLoadOptions {
  /** The text model's tokenizer (finds <|image_pad|>). */
  tokenizer: Tokenizer;
  /** The language model's mrope_section (DecoderArchConfig.mropeSection). */
  mropeSection: readonly [number, number, number] | undefined;
  /** --mm-processor-kwargs. */
  mmProcessorKwargs?: Record<string, unknown>;
  /** False: the HTTP side's copy (processor and prompt only). */
  loadWeights: boolean;
}

const VISUAL_PREFIX = /^(model\.)?visual\./;

export function loadQwenVlFromHf(dir: string, opts: QwenVlLoadOptions): VisionModel {
  const json = readJsonFile(join(dir, 'config.json'));
  if (!json || typeof json.vision_config !== 'object' || json.vision_config === null) throw new Error(`${dir}: config.json has no vision_config`);
  const text = (typeof json.text_config === 'object' && json.text_config !== null ? json.text_config : json) as Record<string, unknown>;
  const config = qwenVisionConfigFromHf(json.vision_config as Record<string, unknown>, typeof text.hidden_size === 'number' ? text.hidden_size : undefined, dir);
  const imageTokenId = typeof json.image_token_id === 'number' ? json.image_token_id : undefined;
  // Read once: a request's mm_processor_kwargs builds its processor from these without file I/O.
  const preprocessor = readJsonFile(join(dir, 'preprocessor_config.json'));
  if (!preprocessor) throw new Error(`${dir}: no preprocessor_config.json, so images cannot be prepared for this model`);
  const processorJson = readJsonFile(join(dir, 'processor_config.json'));
  return qwenVisionModel({
    config,
    source: dir,
    processor: (kwargs) =>
      imageProcessorConfigFromHf({ preprocessor, processor: processorJson, mmProcessorKwargs: kwargs, visionPatchSize: config.patchSize, source: dir }),
    mmProcessorKwargs: opts.mmProcessorKwargs ?? {},
    prompt: qwenVlPromptFormat(opts.tokenizer, imageTokenId, dir),
    mrope: qwenVlMrope(opts.mropeSection, config.spatialMergeSize, dir),
    weights: opts.loadWeights ? readHfVisionWeights(dir, config) : null,
  });
}

/** The pieces both formats assemble a VisionModel from. */
export interface QwenVisionParts {
  config: QwenVisionConfig;
  source: string;
  processor: (kwargs: Record<string, unknown>) => VisionModel['processor'];
  mmProcessorKwargs: Record<string, unknown>;
  prompt: VisionModel['prompt'];
  mrope: NonNullable<VisionModel['mrope']>;
  weights: ModelWeights | null;
}

export function qwenVisionModel(parts: QwenVisionParts): VisionModel & { vision: QwenVisionConfig } {
  const { config, weights, source } = parts;
  return {
    family: 'qwen2_vl',
    source,
    vision: config,
    processor: parts.processor(parts.mmProcessorKwargs),
    processorWith: (kwargs) => parts.processor(kwargs),
    prompt: parts.prompt,
    mrope: parts.mrope,
    weights,
    createEncoder: (opts) => {
      if (!weights) return Promise.reject(new Error(`${source}: the vision model was loaded without weights`));
      return Promise.resolve(createQwenVisionEncoder(config, weights, opts));
    },
  };
}

function readHfVisionWeights(dir: string, config: QwenVisionConfig): ModelWeights {
  const stored = listSafetensors(dir);
  if (!stored) throw new Error(`${dir}: no model.safetensors or index, so the vision tower has no weights`);
  const visual = [...stored.values()].filter((t) => VISUAL_PREFIX.test(t.name));
  const tensors: Array<[string, WeightTensor]> = [];
  readSafetensorsAsF32(visual, (tensor, data) => tensors.push([tensor.name.replace(VISUAL_PREFIX, ''), { kind: 'f32', shape: tensor.shape, data }]));
  return checkedQwenVisionWeights(config, tensors, dir);
}
