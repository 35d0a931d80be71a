// M-RoPE models (VisionModel.mrope, Qwen2-VL / Qwen2.5-VL): the prompt's (t, h, w) positions,
// computed by mropePositions (src/model/vision/mrope-positions.ts, written with the Qwen2-VL
// tower). That file is not in this branch yet: the merge replaces the null below with its import.
import { RequestValidationError } from '../../engine/errors';
import type { DecodedImage, MultiModalInput } from '../../engine/types';
import { qwenVlResizedSize } from '../../model/vision/qwen-vl-preprocess';
import type { ImageProcessorConfig } from '../../model/vision/processor-config';
import type { MropeSpec } from '../../model/vision/vision-model';

type GridThw = [number, number, number];
type MropePositions = (promptTokens: readonly number[], images: { offset: number; gridThw: GridThw }[], spec: MropeSpec) => { positions: Int32Array; delta: number };

const mropePositions: MropePositions | null = null;

/** The positions of a prompt whose images' runs start at `offsets`. */
export function mropeInput(tokenIds: readonly number[], images: readonly DecodedImage[], offsets: readonly number[], processor: ImageProcessorConfig, spec: MropeSpec): NonNullable<MultiModalInput['mrope']> {
  if (mropePositions === null) throw new RequestValidationError('Image inputs of M-RoPE models (Qwen2-VL) are not supported by this build.', 'messages');
  if (processor.family !== 'qwen2_vl') throw new Error(`M-RoPE with a ${processor.family} image processor`);
  const grids = images.map(({ width, height }, i) => {
    const size = qwenVlResizedSize(processor, width, height);
    const gridThw: GridThw = [1, size.height / processor.patchSize, size.width / processor.patchSize];
    return { offset: offsets[i], gridThw };
  });
  return mropePositions(tokenIds, grids, spec);
}
