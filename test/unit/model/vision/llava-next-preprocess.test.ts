// LLaVA-NeXT's anyres preprocessing (LlavaNextImageProcessor) and token count (vLLM's
// get_num_image_tokens for llava_next), against references written here from transformers'
// definitions: the best grid resolution, the resize inside it and the black padding around it,
// the tiles, the base image, and the unpadded feature grid with its newlines.
import { anyresGrid, selectBestResolution } from '../../../../src/model/vision/anyres';
import { llavaNextPlaceholderTokens, preprocessLlavaNext } from '../../../../src/model/vision/llava-next-preprocess';
import { toChannelsFirst } from '../../../../src/model/vision/normalize';
import { imageProcessorConfigFromHf } from '../../../../src/model/vision/processor-config-hf';
import { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, type LlavaNextProcessorConfig } from '../../../../src/model/vision/processor-config';
import { imagePlaceholderTokens, preprocessImage } from '../../../../src/model/vision/preprocess-image';
import { resizeRgb } from '../../../../src/model/vision/resample';
import type { RgbImage } from '../../../../src/model/vision/rgb-image';
import { randomImage } from './random-image';

const LLAVA_16_PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]];

function preprocessorJson(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    image_processor_type: 'LlavaNextImageProcessor', processor_class: 'LlavaNextProcessor', aspect_ratio_setting: 'anyres',
    crop_size: { height: 336, width: 336 }, size: { shortest_edge: 336 }, do_center_crop: true, do_convert_rgb: true, do_normalize: true,
    do_rescale: true, do_resize: true, do_pad: true, image_grid_pinpoints: LLAVA_16_PINPOINTS, image_mean: OPENAI_CLIP_MEAN,
    image_std: OPENAI_CLIP_STD, resample: 3, rescale_factor: 1 / 255, ...overrides,
  };
}

function config(overrides: Record<string, unknown> = {}, processor: Record<string, unknown> = { patch_size: 14 }): LlavaNextProcessorConfig {
  const parsed = imageProcessorConfigFromHf({ preprocessor: preprocessorJson(overrides), processor, source: 'test' });
  if (parsed.family !== 'llava_next') throw new Error(`parsed as ${parsed.family}`);
  return parsed;
}

/** select_best_resolution written out: the candidate keeping the most pixels, then wasting the least. */
function referenceBest(height: number, width: number, pinpoints: ReadonlyArray<readonly number[]>): number[] {
  const scored = pinpoints.map(([h, w]) => {
    const scale = Math.min(w / width, h / height);
    const kept = Math.min(Math.floor(width * scale) * Math.floor(height * scale), width * height);
    return { fit: [h, w], kept, wasted: h * w - kept };
  });
  const most = Math.max(...scored.map((s) => s.kept));
  const candidates = scored.filter((s) => s.kept === most);
  return candidates.reduce((a, b) => (b.wasted < a.wasted ? b : a)).fit;
}

/** The processor's pixel values written out pixel by pixel: the image fitted and centred on black, tiles, the base image first. */
function referencePixels(c: LlavaNextProcessorConfig, image: RgbImage): Float32Array {
  const side = c.cropSize.width;
  const [bh, bw] = referenceBest(image.height, image.width, c.gridPinpoints);
  const scaleW = bw / image.width;
  const scaleH = bh / image.height;
  const fitW = scaleW < scaleH ? bw : Math.min(Math.ceil(image.width * scaleH), bw);
  const fitH = scaleW < scaleH ? Math.min(Math.ceil(image.height * scaleW), bh) : bh;
  const fitted = resizeRgb(image, fitW, fitH, c.resample);
  const padX = Math.floor((bw - fitW) / 2);
  const padY = Math.floor((bh - fitH) / 2);
  const pixel = (x: number, y: number, ch: number) => {
    const fx = x - padX;
    const fy = y - padY;
    return fx < 0 || fy < 0 || fx >= fitW || fy >= fitH ? 0 : fitted.data[(fy * fitW + fx) * 3 + ch];
  };
  const tiles: RgbImage[] = [resizeRgb(image, side, side, c.resample)];
  for (let ty = 0; ty < bh / side; ty++) {
    for (let tx = 0; tx < bw / side; tx++) {
      const data = new Uint8Array(side * side * 3);
      for (let y = 0; y < side; y++) for (let x = 0; x < side; x++) for (let ch = 0; ch < 3; ch++) data[(y * side + x) * 3 + ch] = pixel(tx * side + x, ty * side + y, ch);
      tiles.push({ width: side, height: side, data });
    }
  }
  const out = new Float32Array(tiles.length * 3 * side * side);
  tiles.forEach((tile, i) => out.set(toChannelsFirst(tile, c.normalization), i * 3 * side * side));
  return out;
}

describe('LLaVA-NeXT anyres preprocessing', () => {
  it.each([
    [600, 800, [672, 672]],
    [300, 1000, [336, 1008]],
    [1000, 300, [1008, 336]],
    [336, 672, [336, 672]],
    [100, 100, [336, 672]],
    [500, 700, [672, 672]],
  ])('picks the best resolution for %ix%i (height x width) as select_best_resolution', (height, width, want) => {
    expect(selectBestResolution(height, width, LLAVA_16_PINPOINTS as Array<[number, number]>)).toEqual(want);
    expect(referenceBest(height, width, LLAVA_16_PINPOINTS)).toEqual(want);
  });

  it('agrees with the written-out rule over many sizes', () => {
    for (let height = 20; height < 1400; height += 67) {
      for (let width = 20; width < 1400; width += 71) {
        expect([...selectBestResolution(height, width, LLAVA_16_PINPOINTS as Array<[number, number]>)]).toEqual(referenceBest(height, width, LLAVA_16_PINPOINTS));
      }
    }
  });

  it.each([
    [120, 90],
    [90, 120],
    [200, 37],
    [56, 56],
    [301, 113],
  ])('pads, tiles and prepends the base image of a %ix%i image as the processor does', (width, height) => {
    const c = config({ crop_size: { height: 56, width: 56 }, size: { shortest_edge: 56 }, image_grid_pinpoints: [[56, 112], [112, 56], [112, 112], [168, 56], [56, 168]] });
    const image = randomImage(width, height, width * 1000 + height);
    const out = preprocessLlavaNext(c, image);
    const want = referencePixels(c, image);
    const { rows, columns } = anyresGrid(height, width, c.gridPinpoints, 56);
    expect(out.shape).toEqual([1 + rows * columns, 3, 56, 56]);
    expect(out.tileGrid).toEqual({ rows, columns });
    expect(out.imageSize).toEqual({ width, height });
    expect(out.pixelValues).toEqual(want);
    expect(preprocessImage(c, image).placeholderTokens).toBe(imagePlaceholderTokens(c, width, height));
  });

  it("counts llava-v1.6's tokens for an 800x600 image as vLLM does: 576 + 36 rows of 48 + 36 newlines", () => {
    // Best fit 672x672 (2 x 2 tiles, a 48 x 48 patch grid); the image fills 48 x 36 of it.
    expect(llavaNextPlaceholderTokens(config(), 800, 600)).toBe(576 + 36 * 48 + 36);
    // A tall one: 1008 x 336 (3 x 1 tiles, 72 x 24 patches), 300 wide -> 72 * 300 / 1000 = 21.6 -> 21 columns, padding 1 each side.
    expect(llavaNextPlaceholderTokens(config(), 300, 1000)).toBe(576 + 72 * 22 + 72);
  });

  it('reads the processor files, and refuses what it cannot honour by name', () => {
    const c = config();
    expect(c).toMatchObject({ family: 'llava_next', geometry: 'hf', patchSize: 14, cropSize: { width: 336, height: 336 }, resample: 'bicubic', gridPinpoints: LLAVA_16_PINPOINTS });
    expect(() => config({ image_grid_pinpoints: [[300, 600]] })).toThrow('image_grid_pinpoints must be a list of [height, width] pairs in whole 336-pixel tiles');
    expect(() => config({ size: { shortest_edge: 400 } })).toThrow('shortest_edge 400 with crop_size 336x336 is not supported');
    expect(() => config({ aspect_ratio_setting: 'pad' })).toThrow("aspect_ratio_setting 'pad' is not supported");
    expect(() => config({ do_resize: false })).toThrow('do_resize false is not supported');
    expect(() => config({ tile_size: 3 })).toThrow('unsupported setting tile_size=3');
    expect(() => config({}, { patch_size: 14, vision_feature_select_strategy: 'full' })).toThrow("'full' is not supported for LLaVA-NeXT");
    expect(() => imageProcessorConfigFromHf({ preprocessor: preprocessorJson(), processor: { patch_size: 14 }, modelGridPinpoints: [[336, 672]], source: 'test' })).toThrow("differs from config.json's [[336,672]]");
  });
});
