// The media parts of one prompt (vLLM's MultiModalItemTracker): each image part is checked
// against the model and --limit-mm-per-prompt when it is met, before anything is fetched, and
// resolve() then loads and decodes them all, in prompt order, off the HTTP thread.

import { limitPerPrompt, mergeMediaIoKwargs, checkMediaIoKwargs, type MediaIoKwargs, type MmLimits } from '../../config/multimodal-config';
import { RequestValidationError } from '../../engine/errors';
import type { MultiModalInput } from '../../engine/types';
import { decodeImage, ImageDecodeError } from './image-decode';
import { imageBackground } from './image-io-options';
import type { MediaOptions, ModelModalities } from './media-options';
import { loadMediaBytes } from './media-source';

/** Where chat-message checking reports the media parts it meets. */
export interface MediaPartSink {
  addImage(url: string, param: string): void;
}

/** The request fields that shape media loading and processing. */
export interface MediaRequestFields {
  media_io_kwargs?: unknown;
  mm_processor_kwargs?: unknown;
}

/**
 * vLLM's validate_num_items: the model's own limit (absent: 0, null: none) and the user's
 * --limit-mm-per-prompt, whichever is smaller; the hint names the flag when the model takes more.
 */
export function checkItemCount(modality: string, count: number, modalities: NonNullable<ModelModalities>, limits: MmLimits): void {
  const user = limitPerPrompt(limits, modality);
  const modelLimit = modality in modalities ? modalities[modality] : 0;
  const allowed = modelLimit === null ? user : Math.min(user, modelLimit);
  const supported = modelLimit ?? allowed;
  const limit = Math.min(supported, allowed);
  if (count <= limit) return;
  const hint = count <= supported ? ' Set `--limit-mm-per-prompt` to increase this limit.' : '';
  throw new RequestValidationError(`At most ${limit} ${modality}(s) may be provided in one prompt.${hint}`, modality);
}

function requestObject(value: unknown, name: string): Record<string, unknown> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw new RequestValidationError(`${name} must be an object.`, name);
  return value as Record<string, unknown>;
}

export class MultiModalItems implements MediaPartSink {
  private readonly images: Array<{ url: string; param: string }> = [];
  private readonly mediaIoKwargs: MediaIoKwargs;
  private readonly processorKwargs: Record<string, unknown>;

  /** Checks the request's media fields up front, as vLLM's request model does. */
  constructor(private readonly opts: MediaOptions, request: MediaRequestFields) {
    const requestIo = requestObject(request.media_io_kwargs, 'media_io_kwargs');
    const fail = (message: string): never => {
      throw new RequestValidationError(message, 'media_io_kwargs');
    };
    this.mediaIoKwargs = mergeMediaIoKwargs(opts.mediaIoKwargs, requestIo === null ? null : checkMediaIoKwargs(requestIo, fail));
    this.processorKwargs = { ...(opts.mmProcessorKwargs ?? {}), ...(requestObject(request.mm_processor_kwargs, 'mm_processor_kwargs') ?? {}) };
  }

  addImage(url: string, param: string): void {
    const { modalities } = this.opts;
    // vLLM asks the model's processor first: a text-only model has none (a 400 before any fetch).
    if (modalities === null) throw new RequestValidationError(`${this.opts.modelName} is not a multimodal model`);
    checkItemCount('image', this.images.length + 1, modalities, this.opts.limits);
    this.images.push({ url, param });
  }

  get imageCount(): number {
    return this.images.length;
  }

  /** Loads and decodes every image met; null when the prompt had none. */
  async resolve(): Promise<MultiModalInput | null> {
    if (this.images.length === 0) return null;
    const background = imageBackground(this.mediaIoKwargs.image, 'media_io_kwargs');
    const decodeOptions = { maxPixels: this.opts.maxImagePixels, background };
    const images = await Promise.all(
      this.images.map(async ({ url, param }) => {
        const bytes = await loadMediaBytes(url, this.opts, param);
        try {
          return await decodeImage(bytes, decodeOptions);
        } catch (err) {
          if (err instanceof ImageDecodeError) throw new RequestValidationError(err.message, param);
          throw err;
        }
      }),
    );
    return { images, processorKwargs: this.processorKwargs };
  }
}
