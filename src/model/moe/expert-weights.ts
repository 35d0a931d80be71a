// One expert's [out, in] weight out of a stacked [experts, out, in] tensor, without a copy: the
// experts lie one after another, each a whole number of rows (and so of GGML blocks).
import type { WeightTensor } from '../types';

export function expertWeight(stack: WeightTensor, expert: number): WeightTensor {
  const [experts, out, inp] = stack.shape;
  if (stack.shape.length !== 3 || expert < 0 || expert >= experts) throw new Error(`expert ${expert} of a stack shaped [${stack.shape.join(', ')}]`);
  const shape = [out, inp];
  if (stack.kind === 'f32') {
    const size = out * inp;
    return { kind: 'f32', shape, data: stack.data.subarray(expert * size, (expert + 1) * size) };
  }
  const bytes = stack.data.byteLength / experts;
  return { kind: 'quantized', format: stack.format, shape, data: stack.data.subarray(expert * bytes, (expert + 1) * bytes) };
}
