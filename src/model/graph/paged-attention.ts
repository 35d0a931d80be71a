// Graph pieces for attention over the runner-owned paged KV cache (see decoder-graph.ts for why
// the cache lives outside the graph): per layer one K and one V input of
// [numBlocks, blockSize * kvDim], from which each sequence's blocks are gathered whole, in
// block-table order, as [batch, blocks * blockSize, kvDim] rows.

import { attrInt, GraphBuilder } from './graph-builder';
import { OnnxDataType } from './onnx-proto';

export const CacheInputs = {
  k: (layer: number) => `cache_k.${layer}`,
  v: (layer: number) => `cache_v.${layer}`,
} as const;

export interface LayerCache {
  k: string;
  v: string;
}

/** Declares layer `layer`'s K and V cache inputs. */
export function declareLayerCache(g: GraphBuilder, layer: number, blockSize: number, kvDim: number): LayerCache {
  const dims = ['blocks', blockSize * kvDim];
  return { k: g.input(CacheInputs.k(layer), OnnxDataType.FLOAT, dims), v: g.input(CacheInputs.v(layer), OnnxDataType.FLOAT, dims) };
}

/** The rows of the blocks `blockIds` ([batch, n] int64) of `cache`: [batch, n * blockSize, kvDim]. */
export function gatherBlockRows(g: GraphBuilder, cache: string, blockIds: string, kvDim: number): string {
  return g.op('Reshape', [g.op('Gather', [cache, blockIds], { axis: attrInt(0) }), g.constInt64([0, -1, kvDim])]);
}

export interface PagedSelfAttention {
  /** [batch, seq, heads * headDim] queries (positions already applied). */
  q: string;
  /** [batch, seq, kvDim] keys and values of the new tokens. */
  k: string;
  v: string;
  cache: LayerCache;
  /** [batch, pastBlocks] int64. */
  pastBlocks: string;
  /** [batch, 1, seq, pastBlocks * blockSize + seq] bool: true = may attend. */
  mask: string;
  numHeads: number;
  numKvHeads: number;
  kvDim: number;
}

/** Attention of the new tokens over their past (gathered from the cache) and themselves: [batch, seq, heads * headDim]. */
export function pagedSelfAttention(g: GraphBuilder, a: PagedSelfAttention): string {
  const keys = g.op('Concat', [gatherBlockRows(g, a.cache.k, a.pastBlocks, a.kvDim), a.k], { axis: attrInt(1) });
  const values = g.op('Concat', [gatherBlockRows(g, a.cache.v, a.pastBlocks, a.kvDim), a.v], { axis: attrInt(1) });
  return g.op('Attention', [a.q, keys, values, a.mask], { q_num_heads: attrInt(a.numHeads), kv_num_heads: attrInt(a.numKvHeads) });
}
