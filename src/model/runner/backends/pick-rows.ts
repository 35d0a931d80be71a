// The rows the head reads, gathered from a pass's final hidden rows.

/** Rows `picked` of `rows` ([*, width]) as one array: `rows` itself when every row is picked (they are picked in order). */
export function pickRows(rows: Float32Array, picked: BigInt64Array, width: number): Float32Array {
  if (picked.length * width === rows.length) return rows;
  const out = new Float32Array(picked.length * width);
  picked.forEach((r, i) => out.set(rows.subarray(Number(r) * width, (Number(r) + 1) * width), i * width));
  return out;
}
