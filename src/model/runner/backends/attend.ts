// One layer's paged attention with its options (window, soft-cap, scale, sinks), as every backend
// calls it between a layer's QKV and its o_proj.
import type { LayerAttention } from '../../graph/layer-options';
import type { NativeKernels } from '../native-kernels';
import type { KvView, PassRows } from './decoder-backend';

/** out = attention of q over layer l's cache for the pass's sequences. */
export function attendLayer(native: NativeKernels, q: Float32Array, out: Float32Array, kv: KvView, l: number, pass: PassRows, opts: LayerAttention): void {
  native.attention(q, out, kv.keys[l], kv.values[l], pass.seqInfo, pass.tables, kv.dims, opts.scale, opts.window, opts.softcap, opts.sinks);
}
