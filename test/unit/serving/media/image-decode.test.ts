// Image decoding as vLLM gets it from PIL: every format sharp writes here decodes to the same RGB
// pixels; RGBA is laid on the background, grey + alpha loses its alpha; EXIF orientation is not
// applied; a header declaring too many pixels, a truncated file and non-images are refused.

import sharp, { type Sharp } from 'sharp';
import { decodeImage, ImageDecodeError, type ImageDecodeOptions } from '../../../../src/serving/media/image-decode';

const WHITE = [255, 255, 255] as const;
const OPTIONS: ImageDecodeOptions = { maxPixels: 1_000_000, background: WHITE };

/** A 4x2 image: left half red, right half blue (solid, so lossy formats keep it within a few levels). */
function solidHalves(): Promise<Buffer> {
  const raw = Buffer.alloc(4 * 2 * 3);
  for (let i = 0; i < 8; i++) raw.set(i % 4 < 2 ? [255, 0, 0] : [0, 0, 255], i * 3);
  return sharp(raw, { raw: { width: 4, height: 2, channels: 3 } }).png().toBuffer();
}

const pixel = (rgb: Uint8Array, width: number, x: number, y: number): number[] => [...rgb.subarray((y * width + x) * 3, (y * width + x) * 3 + 3)];

function expectNear(actual: number[], expected: readonly number[], tolerance: number): void {
  actual.forEach((v, i) => expect(Math.abs(v - expected[i])).toBeLessThanOrEqual(tolerance));
}

/** CRC-32 of a PNG chunk's type and data. */
function crc32(bytes: Uint8Array): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

describe('decodeImage', () => {
  const ENCODERS = {
    png: (image: Sharp) => image.png(),
    jpeg: (image: Sharp) => image.jpeg(),
    webp: (image: Sharp) => image.webp(),
    gif: (image: Sharp) => image.gif(),
  };

  it.each(Object.keys(ENCODERS) as Array<keyof typeof ENCODERS>)('decodes %s to RGB', async (format) => {
    const encoded = await ENCODERS[format](sharp(await solidHalves())).toBuffer();
    const image = await decodeImage(encoded, OPTIONS);
    expect([image.width, image.height, image.rgb.length]).toEqual([4, 2, 24]);
    const tolerance = format === 'png' || format === 'gif' ? 0 : 40;
    expectNear(pixel(image.rgb, 4, 0, 1), [255, 0, 0], tolerance);
    expectNear(pixel(image.rgb, 4, 3, 0), [0, 0, 255], tolerance);
  });

  it('keeps the first frame of an animated GIF', async () => {
    const frames = Buffer.concat([Buffer.alloc(2 * 2 * 3, 0), Buffer.alloc(2 * 2 * 3, 255)]);
    const gif = await sharp(frames, { raw: { width: 2, height: 4, channels: 3, pageHeight: 2 } }).gif().toBuffer();
    expect((await sharp(gif).metadata()).pages).toBe(2);
    const image = await decodeImage(gif, OPTIONS);
    expect([image.width, image.height]).toEqual([2, 2]);
    expect(pixel(image.rgb, 2, 1, 1)).toEqual([0, 0, 0]);
  });

  it('lays RGBA on the background (white by default) through the alpha', async () => {
    const rgba = Buffer.from([255, 0, 0, 0, 0, 255, 0, 255, 0, 0, 255, 128]);
    const png = await sharp(rgba, { raw: { width: 3, height: 1, channels: 4 } }).png().toBuffer();
    const onWhite = await decodeImage(png, OPTIONS);
    expect(pixel(onWhite.rgb, 3, 0, 0)).toEqual([255, 255, 255]);
    expect(pixel(onWhite.rgb, 3, 1, 0)).toEqual([0, 255, 0]);
    expectNear(pixel(onWhite.rgb, 3, 2, 0), [127, 127, 255], 1);
    const onBlack = await decodeImage(png, { ...OPTIONS, background: [0, 0, 0] });
    expect(pixel(onBlack.rgb, 3, 0, 0)).toEqual([0, 0, 0]);
    expectNear(pixel(onBlack.rgb, 3, 2, 0), [0, 0, 128], 1);
  });

  it('drops the alpha of grey + alpha, as PIL convert("RGB") does', async () => {
    const la = Buffer.from([200, 0, 50, 255]);
    const png = await sharp(la, { raw: { width: 2, height: 1, channels: 2 } }).toColourspace('b-w').png().toBuffer();
    expect((await sharp(png).metadata()).channels).toBe(2);
    const image = await decodeImage(png, OPTIONS);
    expect(pixel(image.rgb, 2, 0, 0)).toEqual([200, 200, 200]);
    expect(pixel(image.rgb, 2, 1, 0)).toEqual([50, 50, 50]);
  });

  it('does not apply EXIF orientation (PIL does not by default)', async () => {
    const jpeg = await sharp(await solidHalves()).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).toBe(6);
    const image = await decodeImage(jpeg, OPTIONS);
    expect([image.width, image.height]).toEqual([4, 2]);
    expectNear(pixel(image.rgb, 4, 0, 0), [255, 0, 0], 40);
  });

  it('refuses a decompression bomb from its header', async () => {
    const png = Buffer.from(await solidHalves());
    // IHDR follows the 8-byte signature: length(4) "IHDR"(4) width(4) height(4) ... crc(4).
    png.writeUInt32BE(100_000, 16);
    png.writeUInt32BE(100_000, 20);
    png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
    const err = await decodeImage(png, OPTIONS).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ImageDecodeError);
    expect((err as Error).message).toMatch(/10000000000 pixels\) exceeds limit of 1000000 pixels, could be decompression bomb/);
  });

  it('refuses a truncated file and bytes that are no image', async () => {
    const noisy = Buffer.alloc(64 * 64 * 3);
    for (let i = 0; i < noisy.length; i++) noisy[i] = (i * 7919) % 251;
    const png = await sharp(noisy, { raw: { width: 64, height: 64, channels: 3 } }).png().toBuffer();
    const truncated = png.subarray(0, Math.floor(png.length / 2));
    await expect(decodeImage(truncated, OPTIONS)).rejects.toThrow(ImageDecodeError);
    await expect(decodeImage(Buffer.from('hello, not an image'), OPTIONS)).rejects.toThrow(/cannot identify image file/);
    const tiff = await sharp(await solidHalves()).tiff().toBuffer();
    await expect(decodeImage(tiff, OPTIONS)).rejects.toThrow(/format 'tiff' is not one of png, jpeg, webp, gif/);
  });
});
