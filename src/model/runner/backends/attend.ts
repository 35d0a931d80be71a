// One layer's paged attention with its options (window, soft-cap, scale, sinks), as every backend
// calls it between a layer's QKV and its o_proj. Bidirectional image rows of a windowed layer
// take one more call per widened window (bidirectional-runs.ts).
import type { LayerAttention } from '../../graph/layer-options';
import type { NativeKernels } from '../native-kernels';
import { widenedCalls } from '../bidirectional-runs';
import type { KvView, PassRows } from './decoder-backend';

/** out = attention of q over layer l's cache (its KV pool, through the pool's block tables) for the pass's sequences. */
export function attendLayer(native: NativeKernels, q: Float32Array, out: Float32Array, kv: KvView, l: number, pass: PassRows, opts: LayerAttention): void {
  native.attention(q, out, kv.keys[l], kv.values[l], pass.seqInfo, pass.layerTables[l], kv.dims, opts.scale, opts.window, opts.softcap, opts.sinks);
  if (!pass.runRows || !(opts.window > 0)) return;
  for (const call of widenedCalls(pass.seqInfo, pass.runRows, opts.window)) {
    native.attention(q, out, kv.keys[l], kv.values[l], call.seqInfo, pass.layerTables[l], kv.dims, opts.scale, call.window, opts.softcap, opts.sinks);
  }
}
