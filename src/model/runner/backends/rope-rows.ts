// The step's own RoPE cos/sin rows, copied from a layer's table by each row's position.
import type { DecoderLayerOptions, RopeTable } from '../../graph/layer-options';

/** Rows of one pass's cos/sin ([rows, half] each). */
export interface RopeRows {
  cos: Float32Array;
  sin: Float32Array;
}

/** Row i = position of row i ([rows, half] each), or null for a decoder without RoPE. */
export function ropeRows(rope: RopeTable | null, positions: Int32Array): RopeRows | null {
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

/** Per layer, the pass's rows of its RoPE table: computed once per distinct table (layers of one setting share the object). */
export function layerRopeRows(layers: readonly DecoderLayerOptions[], positions: Int32Array): (RopeRows | null)[] {
  const byTable = new Map<RopeTable, RopeRows | null>();
  return layers.map(({ rope }) => {
    if (!rope) return null;
    if (!byTable.has(rope)) byTable.set(rope, ropeRows(rope, positions));
    return byTable.get(rope)!;
  });
}
