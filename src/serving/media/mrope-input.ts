// M-RoPE models (VisionModel.mrope, Qwen2-VL / Qwen2.5-VL): the prompt's (t, h, w) positions,
// from each image's patch grid as the processor will resize it.
import type { DecodedImage, MultiModalInput } from '../../engine/types';
import { qwenVlResizedSize } from '../../model/vision/qwen-vl-preprocess';
import type { ImageProcessorConfig } from '../../model/vision/processor-config';
import { mropePositions } from '../../model/vision/mrope-positions';
import type { MropeSpec } from '../../model/vision/vision-model';

type GridThw = [number, number, number];

/** The positions of a prompt whose images' runs start at `offsets`. */
export function mropeInput(tokenIds: readonly number[], images: readonly DecodedImage[], offsets: readonly number[], processor: ImageProcessorConfig, spec: MropeSpec): NonNullable<MultiModalInput['mrope']> {
  if (processor.family !== 'qwen2_vl') throw new Error(`M-RoPE with a ${processor.family} image processor`);
  const grids = images.map(({ width, height }, i) => {
    const size = qwenVlResizedSize(processor, width, height);
    const gridThw: GridThw = [1, size.height / processor.patchSize, size.width / processor.patchSize];
    return { offset: offsets[i], gridThw };
  });
  return mropePositions(tokenIds, grids, spec);
}
