// The image loader's keyword arguments (media_io_kwargs["image"]), checked as vLLM's ImageMediaIO
// checks them. Keys it does not know are passed on to custom loaders in vLLM; there are none
// here, so they are logged and ignored.

import { RequestValidationError } from '../../engine/errors';
import type { Rgb } from './image-decode';

const WHITE: Rgb = [255, 255, 255];
const KNOWN_KEYS = new Set(['image_mode', 'rgba_background_color']);

function checkBackground(value: unknown, param: string): Rgb {
  const ok = Array.isArray(value) && value.length === 3 && value.every((c) => Number.isInteger(c) && c >= 0 && c <= 255);
  if (!ok) throw new RequestValidationError('rgba_background_color must be a list or tuple of 3 integers in the range [0, 255].', param);
  return value as unknown as Rgb;
}

/** The background RGBA images are laid on, from media_io_kwargs["image"] (server's merged with the request's). */
export function imageBackground(kwargs: Record<string, unknown> | undefined, param: string): Rgb {
  if (!kwargs) return WHITE;
  const unknown = Object.keys(kwargs).filter((key) => !KNOWN_KEYS.has(key));
  if (unknown.length > 0) console.warn(`[media] media_io_kwargs["image"] keys ${unknown.join(', ')} are ignored: no image loader here reads them`);
  // Images go to vision processors as RGB; keeping another mode (vLLM's image_mode) has no consumer here.
  if (kwargs.image_mode !== undefined && kwargs.image_mode !== 'RGB') {
    throw new RequestValidationError(`image_mode ${JSON.stringify(kwargs.image_mode)} is not supported: images are decoded to RGB.`, param);
  }
  return kwargs.rgba_background_color === undefined ? WHITE : checkBackground(kwargs.rgba_background_color, param);
}
