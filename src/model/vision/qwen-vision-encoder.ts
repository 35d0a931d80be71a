// Qwen2.5-VL's ImageEncoder: the tower graph (graph/qwen-vision-graph.ts) in one synchronous
// onnxruntime session, fed one image's patch rows and the index tensors of its size.
import * as ort from 'onnxruntime-node';
import { buildQwenVisionGraph, QwenVisionIO } from '../graph/qwen-vision-graph';
import { SyncSession } from '../runner/session';
import type { ModelWeights } from '../types';
import type { PreprocessedImage } from './preprocessed-image';
import { patchColumns, type QwenVisionConfig } from './qwen-vision-config';
import { qwenVisionLayout } from './qwen-vision-layout';
import type { ImageEncoder, ImageEncoderOptions } from './vision-model';

export function createQwenVisionEncoder(config: QwenVisionConfig, weights: ModelWeights, opts: ImageEncoderOptions): ImageEncoder {
  const session = SyncSession.create(buildQwenVisionGraph(config, weights), { device: 'cpu', intraOpThreads: opts.intraOpThreads });
  return new QwenVisionEncoder(config, session);
}

class QwenVisionEncoder implements ImageEncoder {
  readonly hiddenSize: number;

  constructor(
    private readonly config: QwenVisionConfig,
    private readonly session: SyncSession,
  ) {
    this.hiddenSize = config.outHiddenSize;
  }

  encode(image: PreprocessedImage): Float32Array {
    const columns = patchColumns(this.config);
    const grid = image.gridThw;
    if (!grid) throw new Error("a Qwen2.5-VL image needs its gridThw (Qwen's preprocessing)");
    const [t, gridH, gridW] = grid;
    if (t !== 1) throw new Error(`the vision tower takes still images (t = 1), got t = ${t}`);
    const patches = gridH * gridW;
    if (image.shape.length !== 2 || image.shape[0] !== patches || image.shape[1] !== columns || image.pixelValues.length !== patches * columns) {
      throw new Error(`a ${gridH} x ${gridW} patch image needs pixel values [${patches}, ${columns}], got [${image.shape.join(', ')}]`);
    }
    const layout = qwenVisionLayout(this.config, gridH, gridW);
    const units = layout.windowOrder.length;
    if (units !== image.placeholderTokens) throw new Error(`the image has ${units} merged patches, but its prompt run is ${image.placeholderTokens} tokens`);
    const out = this.session.run({
      [QwenVisionIO.patches]: new ort.Tensor('float32', image.pixelValues, [patches, columns]),
      [QwenVisionIO.rotaryPositions]: new ort.Tensor('int64', layout.rotaryPositions, [patches, 2]),
      [QwenVisionIO.windowOrder]: new ort.Tensor('int64', layout.windowOrder, [units]),
      [QwenVisionIO.windowGather]: new ort.Tensor('int64', layout.windowGather, [layout.windowGather.length]),
      [QwenVisionIO.windowKeys]: new ort.Tensor('bool', layout.windowKeys, [layout.windowKeys.length / layout.windowSlots, 1, 1, layout.windowSlots]),
      [QwenVisionIO.windowScatter]: new ort.Tensor('int64', layout.windowScatter, [patches]),
      [QwenVisionIO.restoreOrder]: new ort.Tensor('int64', layout.restoreOrder, [units]),
    });
    return out[QwenVisionIO.embeds].data as Float32Array;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}
