// The ImageEncoder of a ViT tower + projector: the graph built once from the weights, run in a
// synchronous onnxruntime session (the engine worker calls encode between steps).
import * as ort from 'onnxruntime-node';
import { SyncSession } from '../../runner/session';
import type { ModelWeights } from '../../types';
import type { PreprocessedImage } from '../preprocessed-image';
import type { ImageEncoder, ImageEncoderOptions } from '../vision-model';
import { outputTokens, type VitConfig } from './vit-config';
import { buildVitGraph, VitIO, type VitGraphOptions } from './vit-graph';

export function createVitEncoder(config: VitConfig, weights: ModelWeights, opts: ImageEncoderOptions & VitGraphOptions): ImageEncoder {
  const session = SyncSession.create(buildVitGraph(config, weights, opts), { device: 'cpu', intraOpThreads: opts.intraOpThreads });
  const side = config.imageSize;
  const tokens = outputTokens(config);
  const hiddenSize = config.projector.textHiddenSize;
  return {
    hiddenSize,
    encode(image: PreprocessedImage): Float32Array {
      const expected = [1, 3, side, side];
      if (image.shape.join(',') !== expected.join(',') || image.pixelValues.length !== 3 * side * side) {
        throw new Error(`the vision tower takes pixel values of shape [${expected.join(', ')}], got [${image.shape.join(', ')}]`);
      }
      if (image.placeholderTokens !== tokens) {
        throw new Error(`the image has ${image.placeholderTokens} placeholder tokens, but the vision tower returns ${tokens} rows`);
      }
      const out = session.run({ [VitIO.pixels]: new ort.Tensor('float32', image.pixelValues, expected) });
      return out[VitIO.embeds].data as Float32Array;
    },
    release: () => session.release(),
  };
}
