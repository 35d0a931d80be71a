// The step's own RoPE cos/sin rows, copied from a layer's table by each row's position. An M-RoPE
// table (Qwen2-VL) builds each row from three positions: its first section of half-dims from the
// table row of the t position, the next from h's, the rest from w's (transformers'
// apply_multimodal_rotary_pos_emb, whose cos/sin repeat the half so both halves split alike).
import type { DecoderLayerOptions, RopeTable } from '../../graph/layer-options';

/** Rows of one pass's cos/sin ([rows, half] each). */
export interface RopeRows {
  cos: Float32Array;
  sin: Float32Array;
}

/**
 * Row i = position of row i ([rows, half] each), or null for a decoder without RoPE.
 * `ropePositions` ([3 * rows]: every row's t, then h, then w) applies to an M-RoPE table; a row
 * whose three positions are equal gets exactly its 1-D row.
 */
export function ropeRows(rope: RopeTable | null, positions: Int32Array, ropePositions?: Int32Array): RopeRows | null {
  if (!rope) return null;
  const { cos, sin, half } = rope;
  const n = positions.length;
  const rowCos = new Float32Array(n * half);
  const rowSin = new Float32Array(n * half);
  if (ropePositions) {
    const section = rope.mropeSection;
    if (!section) throw new Error('a step carries M-RoPE positions, but the model has no mrope_section');
    if (ropePositions.length !== 3 * n) throw new Error(`M-RoPE positions: expected ${3 * n} (3 x ${n} rows), got ${ropePositions.length}`);
    const tableRows = cos.length / half;
    const bounds = [0, section[0], section[0] + section[1], half];
    for (let axis = 0; axis < 3; axis++) {
      const [from, to] = [bounds[axis], bounds[axis + 1]];
      for (let r = 0; r < n; r++) {
        const p = ropePositions[axis * n + r];
        if (!(p >= 0 && p < tableRows)) throw new Error(`M-RoPE position ${p} is outside the model's ${tableRows} positions`);
        rowCos.set(cos.subarray(p * half + from, p * half + to), r * half + from);
        rowSin.set(sin.subarray(p * half + from, p * half + to), r * half + from);
      }
    }
    return { cos: rowCos, sin: rowSin };
  }
  for (let r = 0; r < n; r++) {
    const at = positions[r] * half;
    rowCos.set(cos.subarray(at, at + half), r * half);
    rowSin.set(sin.subarray(at, at + half), r * half);
  }
  return { cos: rowCos, sin: rowSin };
}

/** Per layer, the pass's rows of its RoPE table: computed once per distinct table (layers of one setting share the object). */
export function layerRopeRows(layers: readonly DecoderLayerOptions[], positions: Int32Array, ropePositions?: Int32Array): (RopeRows | null)[] {
  const byTable = new Map<RopeTable, RopeRows | null>();
  return layers.map(({ rope }) => {
    if (!rope) return null;
    if (!byTable.has(rope)) byTable.set(rope, ropeRows(rope, positions, ropePositions));
    return byTable.get(rope)!;
  });
}
