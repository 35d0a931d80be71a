// A vision model's prompt after tokenizing: each image's placeholder token (what the chat template
// printed for it) becomes the model's run of image tokens (vLLM's PromptReplacement), and the
// request's images learn where their rows go (placements: offset, length, hash) and, for M-RoPE
// models, the prompt's 3-D positions.
import { RequestValidationError } from '../../engine/errors';
import type { DecodedImage, MultiModalInput } from '../../engine/types';
import { ImageInputError } from '../../model/vision/image-input-error';
import { imagePlaceholderTokens } from '../../model/vision/preprocess-image';
import type { ImageProcessorConfig } from '../../model/vision/processor-config';
import type { VisionModel } from '../../model/vision/vision-model';
import { mropeInput } from './mrope-input';

/** One image's run of image tokens in the expanded prompt. */
export interface ImageRun {
  offset: number;
  length: number;
}

/** The processor with the request's mm_processor_kwargs: a key it refuses is the client's 400. */
export function requestProcessor(vision: Pick<VisionModel, 'processorWith'>, kwargs: Record<string, unknown>): ImageProcessorConfig {
  try {
    return vision.processorWith(kwargs);
  } catch (err) {
    throw new RequestValidationError(`Invalid mm_processor_kwargs: ${(err as Error).message}`, 'mm_processor_kwargs');
  }
}

/**
 * Replaces the i-th placeholder token with image i's prefix, image tokens and suffix. The
 * placeholders must be exactly one per image, else vLLM's 400 (its _validate_mm_placeholders).
 */
export function expandImagePlaceholders(
  tokenIds: readonly number[],
  images: readonly Pick<DecodedImage, 'width' | 'height'>[],
  vision: Pick<VisionModel, 'prompt'>,
  processor: ImageProcessorConfig,
  param = 'messages',
): { tokenIds: number[]; runs: ImageRun[] } {
  const { placeholderTokenId, imageTokenId, prefix, suffix } = vision.prompt;
  const found = tokenIds.reduce((n, id) => n + (id === placeholderTokenId ? 1 : 0), 0);
  if (found !== images.length) {
    throw new RequestValidationError(
      `Expected there to be ${images.length} prompt updates corresponding to ${images.length} image items, but instead found ${found} prompt updates! ` +
        'This is likely because you forgot to include input placeholder tokens (e.g., `<image>`, `<|image_pad|>`) in the prompt. ' +
        'If the model has a chat template, make sure you have applied it before calling `LLM.generate`.',
      param,
    );
  }
  const counts = images.map(({ width, height }) => {
    try {
      return imagePlaceholderTokens(processor, width, height);
    } catch (err) {
      if (err instanceof ImageInputError) throw new RequestValidationError(err.message, param);
      throw err;
    }
  });
  const out: number[] = [];
  const runs: ImageRun[] = [];
  for (const id of tokenIds) {
    if (id !== placeholderTokenId) {
      out.push(id);
      continue;
    }
    const length = counts[runs.length];
    out.push(...prefix);
    runs.push({ offset: out.length, length });
    for (let i = 0; i < length; i++) out.push(imageTokenId);
    out.push(...suffix);
  }
  return { tokenIds: out, runs };
}

/**
 * Expands `prompt`'s placeholders for `input`'s images and fills `input.placements` (with the
 * images' hashes, computed meanwhile) and, for an M-RoPE model, `input.mrope`.
 */
export async function placeImages(prompt: { tokenIds: number[] }, input: MultiModalInput, vision: VisionModel, hashes: Promise<string[]>, param = 'messages'): Promise<void> {
  const processor = requestProcessor(vision, input.processorKwargs);
  const { tokenIds, runs } = expandImagePlaceholders(prompt.tokenIds, input.images, vision, processor, param);
  const ids = await hashes;
  prompt.tokenIds = tokenIds;
  input.placements = runs.map((run, i) => ({ ...run, hash: ids[i] }));
  if (vision.mrope) {
    input.mrope = mropeInput(
      tokenIds,
      input.images,
      runs.map((r) => r.offset),
      processor,
      vision.mrope,
    );
  }
}
