// Row slices of a fused [out, in] weight (phi3's qkv_proj and gate_up_proj), so a checkpoint that
// stores projections stacked is served as the separate canonical weights. Rows are whole in every
// layout we hold (float32 values, or GGML blocks along the input dimension), so a slice is a view
// of the loaded bytes, never a copy.
import type { WeightTensor } from '../types';
import type { WeightMap } from '../weight-map';

/** Replaces `fused` in `weights` by consecutive row ranges named `parts` ([name, rows] in order). */
export function splitFusedRows(weights: WeightMap, fused: string, parts: ReadonlyArray<readonly [name: string, rows: number]>): void {
  if (!weights.has(fused)) return;
  const tensor = weights.get(fused);
  const [rows, cols] = tensor.shape;
  const total = parts.reduce((sum, [, n]) => sum + n, 0);
  if (total !== rows) throw new Error(`weight ${fused} has ${rows} rows, its parts ${parts.map(([n]) => n).join(', ')} take ${total}`);
  const rowBytes = tensor.data.byteLength / rows;
  let start = 0;
  for (const [name, n] of parts) {
    weights.set(name, rowSlice(tensor, start, n, cols, rowBytes));
    start += n;
  }
  weights.release(fused);
}

function rowSlice(tensor: WeightTensor, start: number, rows: number, cols: number, rowBytes: number): WeightTensor {
  const file = tensor.file && { path: tensor.file.path, offset: tensor.file.offset + start * rowBytes, byteLength: rows * rowBytes };
  if (tensor.kind === 'f32') return { kind: 'f32', shape: [rows, cols], data: tensor.data.subarray(start * cols, (start + rows) * cols), file };
  return { kind: 'quantized', format: tensor.format, shape: [rows, cols], data: tensor.data.subarray(start * rowBytes, (start + rows) * rowBytes), file };
}
