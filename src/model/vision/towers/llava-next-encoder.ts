// LLaVA-NeXT's ImageEncoder: the base image and its tiles through the CLIP tower and projector in
// one batch (the ViT graph), then transformers' pack_image_features with 'spatial_unpad': the
// tiles' patch rows laid out as one grid over the image, cut back to the image's aspect ratio
// (unpad_image), image_newline after each grid row, the base image's rows first.
import * as ort from 'onnxruntime-node';
import { requireWeight, toF32 } from '../../graph/weights';
import { SyncSession } from '../../runner/session';
import type { ModelWeights } from '../../types';
import { unpaddedRegion } from '../anyres';
import type { PreprocessedImage } from '../preprocessed-image';
import type { ImageEncoder, ImageEncoderOptions } from '../vision-model';
import { patchesPerSide, type VitConfig } from './vit-config';
import { buildVitGraph, VitIO } from './vit-graph';
import { IMAGE_NEWLINE } from './vit-weights';

export function createLlavaNextEncoder(config: VitConfig, weights: ModelWeights, opts: ImageEncoderOptions): ImageEncoder {
  const session = SyncSession.create(buildVitGraph(config, weights), { device: 'cpu', intraOpThreads: opts.intraOpThreads });
  const newline = toF32(requireWeight(weights, IMAGE_NEWLINE));
  const side = config.imageSize;
  const hiddenSize = config.projector.textHiddenSize;
  return {
    hiddenSize,
    encode(image: PreprocessedImage): Float32Array {
      const { tileGrid, imageSize } = image;
      if (!tileGrid || !imageSize) throw new Error('a LLaVA-NeXT image needs its tile grid and original size (preprocessLlavaNext)');
      const count = 1 + tileGrid.rows * tileGrid.columns;
      const expected = [count, 3, side, side];
      if (image.shape.join(',') !== expected.join(',') || image.pixelValues.length !== count * 3 * side * side) {
        throw new Error(`the vision tower takes pixel values of shape [${expected.join(', ')}], got [${image.shape.join(', ')}]`);
      }
      const out = session.run({ [VitIO.pixels]: new ort.Tensor('float32', image.pixelValues, expected) });
      const rows = packTileFeatures(out[VitIO.embeds].data as Float32Array, patchesPerSide(config), hiddenSize, tileGrid, imageSize, newline);
      if (rows.length / hiddenSize !== image.placeholderTokens) {
        throw new Error(`the image has ${image.placeholderTokens} placeholder tokens, but the vision tower returns ${rows.length / hiddenSize} rows`);
      }
      return rows;
    },
    release: () => session.release(),
  };
}

/**
 * `features`: [1 + tiles, patches^2, hidden], the base image first and the tiles row by row.
 * Returns the base rows, then each kept row of the tile grid followed by `newline`.
 */
export function packTileFeatures(
  features: Float32Array,
  patches: number,
  hidden: number,
  grid: { rows: number; columns: number },
  imageSize: { width: number; height: number },
  newline: Float32Array,
): Float32Array {
  const perTile = patches * patches;
  const kept = unpaddedRegion(imageSize.height, imageSize.width, patches * grid.rows, patches * grid.columns);
  const out = new Float32Array((perTile + kept.height * (kept.width + 1)) * hidden);
  out.set(features.subarray(0, perTile * hidden));
  let at = perTile * hidden;
  for (let y = kept.top; y < kept.top + kept.height; y++) {
    for (let x = kept.left; x < kept.left + kept.width; x++) {
      const tile = 1 + Math.floor(y / patches) * grid.columns + Math.floor(x / patches);
      const row = tile * perTile + (y % patches) * patches + (x % patches);
      out.set(features.subarray(row * hidden, (row + 1) * hidden), at);
      at += hidden;
    }
    out.set(newline, at);
    at += hidden;
  }
  return out;
}
