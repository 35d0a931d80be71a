// Encoded image bytes -> 8-bit RGB pixels, as vLLM's ImageMediaIO gives them (PIL's Image.open
// then convert("RGB")). sharp (libvips) decodes in libuv's thread pool, so a large image never
// blocks the HTTP thread; its pixel limit refuses a decompression bomb from the header, before
// any pixel memory is taken.

import sharp, { type Metadata, type Sharp } from 'sharp';
import type { DecodedImage } from '../../engine/types';

/** The formats vLLM's users send: PIL opens more, but these four are what browsers and SDKs produce. */
const ACCEPTED_FORMATS = new Set(['png', 'jpeg', 'webp', 'gif']);

export type Rgb = readonly [number, number, number];

export interface ImageDecodeOptions {
  /** Most width x height an image may declare. */
  maxPixels: number;
  /** What transparent pixels of an RGBA image are laid on (vLLM's rgba_background_color, white by default). */
  background: Rgb;
}

/** The bytes are not an image this server decodes (vLLM: PIL's UnidentifiedImageError, a 400). */
export class ImageDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageDecodeError';
  }
}

async function readHeader(bytes: Uint8Array): Promise<Metadata> {
  try {
    // No pixel limit here: the header's size is compared with ours below, with a clearer message.
    return await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw new ImageDecodeError(`cannot identify image file: ${(err as Error).message}`);
  }
}

/**
 * PIL's convert("RGB"): vLLM lays an RGBA image on its background colour through the alpha mask;
 * every other mode with transparency (grey + alpha, a palette with a transparent index) drops it.
 */
function toRgb(pipeline: Sharp, header: Metadata, background: Rgb): Sharp {
  if (!header.hasAlpha) return pipeline;
  const rgba = header.channels === 4 && !header.isPalette;
  if (rgba) return pipeline.flatten({ background: { r: background[0], g: background[1], b: background[2] } });
  return pipeline.removeAlpha();
}

/** Decodes the first frame of a PNG, JPEG, WebP or GIF; EXIF orientation is not applied (PIL's default). */
export async function decodeImage(bytes: Uint8Array, options: ImageDecodeOptions): Promise<DecodedImage> {
  const header = await readHeader(bytes);
  if (!header.format || !ACCEPTED_FORMATS.has(header.format)) {
    throw new ImageDecodeError(`cannot identify image file: format '${header.format ?? 'unknown'}' is not one of ${[...ACCEPTED_FORMATS].join(', ')}`);
  }
  const width = header.width ?? 0;
  const height = header.pageHeight ?? header.height ?? 0;
  if (width * height > options.maxPixels) {
    throw new ImageDecodeError(`Image size (${width * height} pixels) exceeds limit of ${options.maxPixels} pixels, could be decompression bomb DOS attack.`);
  }
  // animated: false keeps the first frame only; failOn 'warning' makes a truncated file an error, as PIL's.
  const pipeline = sharp(bytes, { limitInputPixels: options.maxPixels, animated: false, failOn: 'warning', autoOrient: false });
  try {
    const { data, info } = await toRgb(pipeline, header, options.background)
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new ImageDecodeError(`decoded image has ${info.channels} channels, expected RGB`);
    return { width: info.width, height: info.height, rgb: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  } catch (err) {
    if (err instanceof ImageDecodeError) throw err;
    throw new ImageDecodeError(`image file is truncated or corrupt: ${(err as Error).message}`);
  }
}
