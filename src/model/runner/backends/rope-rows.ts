// The step's own RoPE cos/sin rows, copied from the architecture's tables by each row's position.
import type { SegmentedDecoder } from '../../graph/decoder-segments';

/** Row i = position of row i ([rows, half] each), or null for a decoder without RoPE. */
export function ropeRows(rope: SegmentedDecoder['rope'], positions: Int32Array): { cos: Float32Array; sin: Float32Array } | null {
  if (!rope) return null;
  const { cos, sin, half } = rope;
  const n = positions.length;
  const rowCos = new Float32Array(n * half);
  const rowSin = new Float32Array(n * half);
  for (let r = 0; r < n; r++) {
    const at = positions[r] * half;
    rowCos.set(cos.subarray(at, at + half), r * half);
    rowSin.set(sin.subarray(at, at + half), r * half);
  }
  return { cos: rowCos, sin: rowSin };
}
