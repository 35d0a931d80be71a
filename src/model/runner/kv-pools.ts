// Which layers share a paged KV pool. A layer that attends within a sliding window reads at most
// `window` past positions, so it needs only about window / blockSize + 1 blocks per sequence
// whatever the sequence's length: it gets a pool of its own whose block tables drop the blocks
// behind the window (engine/core/kv-cache-manager.ts), as vLLM's hybrid KV cache manager keeps
// one block group per attention type. Full-attention layers (all layers, without windows) keep pool 0.
import { slidingWindowOf } from '../graph/layer-options';
import type { DecoderArchConfig, ModelArchConfig } from '../types';
import { KV_STORAGE, type KvStorageDtype } from './kv-dtype';

/** Layers whose K/V live in one pool, and the window they attend within (0: full attention). */
export interface KvLayerGroup {
  layers: readonly number[];
  window: number;
}

/** A pool of KV blocks: its layers, their window, and how many blocks it has. */
export interface KvPool extends KvLayerGroup {
  numBlocks: number;
}

/** Per layer, the window it attends within (0: every past position). */
export function layerWindows(config: ModelArchConfig): number[] {
  return Array.from({ length: config.numLayers }, (_, l) => slidingWindowOf(config as DecoderArchConfig, l));
}

/** The model's layers grouped by window, full attention first: one group (every layer) for a model without windows. */
export function kvLayerGroups(config: ModelArchConfig): KvLayerGroup[] {
  const windows = layerWindows(config);
  const distinct = [...new Set(windows)].sort((a, b) => a - b);
  return distinct.map((window) => ({ window, layers: windows.flatMap((w, l) => (w === window ? [l] : [])) }));
}

/** Every layer in one full-attention group (runners that keep one pool, and models without windows). */
export function singleKvGroup(config: ModelArchConfig): KvLayerGroup[] {
  return [{ window: 0, layers: Array.from({ length: config.numLayers }, (_, l) => l) }];
}

/** Bytes one block of the group takes across its layers (K and V). */
export function groupBytesPerBlock(config: ModelArchConfig, group: KvLayerGroup, blockSize: number, dtype: KvStorageDtype): number {
  return 2 * group.layers.length * blockSize * config.numKvHeads * config.headDim * KV_STORAGE[dtype].bytesPerElement;
}

/**
 * Blocks a sequence holds at most in a windowed pool while `chunk` new tokens are computed: the
 * window behind the first new token (window - 1 positions) plus the chunk, over block boundaries.
 */
export function windowBlocksPerSequence(window: number, blockSize: number, chunk: number): number {
  return Math.ceil((window - 1 + chunk) / blockSize) + 1;
}

/** True unless the pools are the one full-attention pool of every layer (what runners and the engine do without pools). */
export function poolsDifferFromOne(pools: readonly KvLayerGroup[]): boolean {
  return pools.length > 1 || pools[0].window > 0;
}
