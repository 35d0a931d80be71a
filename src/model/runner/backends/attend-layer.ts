// One layer's paged-attention step, as every backend runs it between its linears: the rows' new
// K/V go into the layer's KV pool, then the rows attend over that pool through the layer's block
// tables, within the layer's sliding window when it has one.
import type { NativeKernels } from '../native-kernels';
import type { KvView, PassRows } from './decoder-backend';

/** q [rows, heads * headDim], k and v [rows, kvHeads * headDim] of layer `l`; writes the attention output into `out`. */
export function attendLayer(native: NativeKernels, kv: KvView, pass: PassRows, l: number, q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array): void {
  native.writeKv(k, v, kv.keys[l], kv.values[l], pass.layerSlots[l], kv.kvCode);
  const window = kv.windows[l];
  // Without a window the call keeps the kernel's original arguments.
  if (window > 0) native.attention(q, out, kv.keys[l], kv.values[l], pass.seqInfo, pass.layerTables[l], kv.dims, kv.scale, window);
  else native.attention(q, out, kv.keys[l], kv.values[l], pass.seqInfo, pass.layerTables[l], kv.dims, kv.scale);
}
