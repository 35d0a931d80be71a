// What the serving layer needs to turn image parts into decoded images: the media flags, and
// which modalities the served model takes (vLLM's supported_mm_limits).

import { realpathSync } from 'node:fs';
import type { ServerConfig } from '../../config/server-config';
import type { MediaIoKwargs, MmLimits } from '../../config/multimodal-config';
import { DUMMY_MODEL_NAME } from '../../config/flag-values';

/**
 * Items of each modality the model takes per prompt (null: any number), or null for a text-only
 * model. The vision-language models fill it from their architecture descriptor.
 */
export type ModelModalities = Record<string, number | null> | null;

/** The modalities of a model without a vision or audio encoder. */
export const TEXT_ONLY: ModelModalities = null;

/** Gemma 3, LLaVA-1.5 and Qwen2.5-VL take any number of images (vLLM's get_supported_mm_limits: {"image": None}); video is not served. */
export const VISION_MODALITIES: ModelModalities = { image: null };

export interface MediaOptions {
  /** vLLM names the model by its path in the "is not a multimodal model" error. */
  modelName: string;
  modalities: ModelModalities;
  /** The real path of --allowed-local-media-path; null: file:// URLs are refused. */
  allowedLocalMediaPath: string | null;
  allowedMediaDomains: readonly string[];
  fetchTimeoutMs: number;
  allowRedirects: boolean;
  maxImageBytes: number;
  maxImagePixels: number;
  limits: MmLimits;
  mediaIoKwargs: MediaIoKwargs;
  mmProcessorKwargs: Record<string, unknown> | null;
}

type MediaFlags = Pick<
  ServerConfig,
  | 'model'
  | 'allowedLocalMediaPath'
  | 'allowedMediaDomains'
  | 'imageFetchTimeoutSeconds'
  | 'mediaUrlAllowRedirects'
  | 'maxImageFilesizeMb'
  | 'maxImagePixels'
  | 'limitMmPerPrompt'
  | 'mediaIoKwargs'
  | 'mmProcessorKwargs'
>;

let warnedTextOnly = false;

/** The processing flags a text-only model never applies: said once per process, not silently dropped. */
function warnIfUnused(config: MediaFlags, modalities: ModelModalities): void {
  if (modalities !== null || warnedTextOnly) return;
  const given = [
    Object.keys(config.limitMmPerPrompt).length > 0 && '--limit-mm-per-prompt',
    Object.keys(config.mediaIoKwargs).length > 0 && '--media-io-kwargs',
    config.mmProcessorKwargs !== null && '--mm-processor-kwargs',
  ].filter((flag): flag is string => typeof flag === 'string');
  if (given.length === 0) return;
  warnedTextOnly = true;
  console.warn(`[media] ${given.join(', ')}: no effect, ${config.model ?? DUMMY_MODEL_NAME} is not a multimodal model (image parts get a 400)`);
}

export function mediaOptionsFrom(config: MediaFlags, modalities: ModelModalities): MediaOptions {
  warnIfUnused(config, modalities);
  return {
    modelName: config.model ?? DUMMY_MODEL_NAME,
    modalities,
    allowedLocalMediaPath: config.allowedLocalMediaPath === null ? null : realpathSync(config.allowedLocalMediaPath),
    allowedMediaDomains: config.allowedMediaDomains,
    fetchTimeoutMs: config.imageFetchTimeoutSeconds * 1000,
    allowRedirects: config.mediaUrlAllowRedirects,
    maxImageBytes: Math.floor(config.maxImageFilesizeMb * 2 ** 20),
    maxImagePixels: config.maxImagePixels,
    limits: config.limitMmPerPrompt,
    mediaIoKwargs: config.mediaIoKwargs,
    mmProcessorKwargs: config.mmProcessorKwargs,
  };
}
