// How big the paged KV cache is (blocks) and the effective max_model_len, from the flags
// (--num-gpu-blocks-override, --kv-cache-memory-bytes, --gpu-memory-utilization) and the memory
// the machine has.

import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { encoderSpecOf } from '../../model/encoder-spec';
import { groupBytesPerBlock, poolsDifferFromOne, singleKvGroup, windowBlocksPerSequence, type KvLayerGroup, type KvPool } from '../../model/runner/kv-pools';
import type { KvStorageDtype } from '../../model/runner/kv-dtype';
import type { LoadedModel } from '../../model/types';
import type { EngineOptions } from '../types';

/** Share of free memory the KV cache takes when --kv-cache-memory is not given. */
const AUTO_KV_MEMORY_FRACTION = 0.2;

export interface KvPlan {
  /** Blocks of pool 0 (every layer's, unless the model has sliding-window layers in pools of their own). */
  numBlocks: number;
  maxModelLen: number;
  /** Bytes one block of pool 0 takes across its layers. */
  bytesPerBlock: number;
  /** Every pool with its block count, pool 0 first (kv-pools.ts). */
  pools: KvPool[];
  /** What all pools take together. */
  totalBytes: number;
}

/** What the KV budget is carved from (injectable for tests). */
export interface MemoryInfo {
  freeBytes: number;
  /** RAM on cpu; device memory with cuda (null when it cannot be read). */
  totalBytes: number | null;
  /** Already taken before the KV cache: the process (cpu) or the weights on the device (cuda). */
  usedBytes: number;
}

export function readMemoryInfo(model: LoadedModel, device: 'cpu' | 'cuda'): MemoryInfo {
  if (device === 'cpu') {
    // The session will hold its own copy of the weights besides what this process holds now.
    return { freeBytes: os.freemem(), totalBytes: os.totalmem(), usedBytes: process.memoryUsage().rss + weightBytes(model) };
  }
  return { freeBytes: os.freemem(), totalBytes: cudaDeviceMemory(), usedBytes: weightBytes(model) };
}

function weightBytes(model: LoadedModel): number {
  const weights = model.weights;
  if (!weights) return 0;
  return weights.names().reduce((n, name) => n + weights.get(name).data.byteLength, 0);
}

/** Total memory of the first visible CUDA device, from nvidia-smi; null when unavailable. */
function cudaDeviceMemory(): number | null {
  const visible = (process.env.CUDA_VISIBLE_DEVICES ?? '0').split(',')[0].trim() || '0';
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=memory.total', '--format=csv,noheader,nounits', '-i', visible], { encoding: 'utf8', timeout: 10_000 });
    const mib = Number(out.trim().split('\n')[0]);
    return Number.isFinite(mib) && mib > 0 ? mib * 2 ** 20 : null;
  } catch {
    return null;
  }
}

/** KV blocks an encoder-decoder sequence holds for its cross-attention K/V (0 for decoder-only models). */
function encoderBlocksOf(model: LoadedModel, blockSize: number): number {
  const encoder = encoderSpecOf(model.config);
  return encoder ? Math.ceil(encoder.positions / blockSize) : 0;
}

/** More blocks than a full batch of max-length sequences would never be used. */
function usefulBlocks(options: KvPlanOptions, maxModelLen: number, encoderBlocks: number): number {
  return options.maxNumSeqs * (Math.ceil(maxModelLen / options.blockSize) + encoderBlocks);
}

/** The engine options with --kv-cache-dtype resolved to what the cache stores (absent: float32). */
export type KvPlanOptions = Omit<EngineOptions, 'kvCacheDtype'> & { kvCacheDtype?: KvStorageDtype };

/**
 * Decides the number of KV blocks and the effective max_model_len. An explicit budget
 * that cannot hold one max_model_len sequence is a start-up error (as in vLLM); a derived
 * max_model_len is lowered to what the cache holds instead. Budget, in order: --num-gpu-blocks-override,
 * --kv-cache-memory-bytes, --gpu-memory-utilization × total memory − memory in use, else a share of free memory.
 * `groups` (kvPoolGroups): sliding-window layers in pools of their own, sized for max-num-seqs
 * sequences at their window; pool 0's block count is what the budget and the override set.
 */

export function planKvCache(
  model: LoadedModel,
  options: KvPlanOptions,
  memory: MemoryInfo = readMemoryInfo(model, options.device),
  groups: readonly KvLayerGroup[] = singleKvGroup(model.config),
): KvPlan {
  const blockSize = options.blockSize;
  const dtype = options.kvCacheDtype ?? 'float32';
  const groupBytes = groups.map((group) => groupBytesPerBlock(model.config, group, blockSize, dtype));
  const bytesPerBlock = groupBytes[0];
  const encoderBlocks = encoderBlocksOf(model, blockSize);
  let maxModelLen = options.maxModelLen ?? model.contextLength;
  if (options.maxModelLen !== null && options.maxModelLen > model.contextLength) {
    throw new Error(
      `max_model_len ${options.maxModelLen} is larger than the model's context length ${model.contextLength}.`,
    );
  }
  const fullGroup = groups[0].window === 0;
  const windowedFor = (seqs: number) => groups.map((group) => (group.window > 0 ? windowedPoolSize(group.window, options, maxModelLen, seqs) : null));
  let windowed = windowedFor(options.maxNumSeqs);
  let numBlocks: number;
  if (options.numBlocksOverride != null) {
    numBlocks = options.numBlocksOverride;
  } else {
    const budget = kvBudget(options, memory);
    // Windowed pools are sized for as many max_model_len sequences as the budget holds in every
    // pool (at most max-num-seqs); pool 0 (full attention) takes the rest.
    if (fullGroup) windowed = windowedFor(sequencesInBudget(budget.bytes, groups, groupBytes, options, maxModelLen));
    const windowedBytes = windowed.reduce((n, w, g) => n + (w && g > 0 ? w.wanted * groupBytes[g] : 0), 0);
    const room = Math.floor(Math.max(0, budget.bytes - windowedBytes) / bytesPerBlock);
    const useful = fullGroup ? usefulBlocks(options, maxModelLen, encoderBlocks) : windowed[0]!.wanted;
    numBlocks = budget.capped || !fullGroup ? Math.min(useful, room) : room;
    if (budget.fromUtilization && numBlocks < 1) {
      throw new Error(
        `--gpu-memory-utilization ${options.gpuMemoryUtilization} leaves no memory for the KV cache: ` +
          `${(((options.gpuMemoryUtilization ?? 0) * (memory.totalBytes ?? 0)) / 2 ** 30).toFixed(2)} GiB allowed, ${(memory.usedBytes / 2 ** 30).toFixed(2)} GiB already used. Raise it.`,
      );
    }
  }
  if (numBlocks < 1) {
    throw new Error(`KV cache budget is smaller than one block (${bytesPerBlock} bytes); raise --kv-cache-memory.`);
  }
  const pools: KvPool[] = groups.map((group, g) => ({ ...group, numBlocks: g === 0 ? numBlocks : windowed[g]!.wanted }));
  for (const [g, pool] of pools.entries()) {
    const w = windowed[g];
    if (w && pool.numBlocks < w.least) {
      throw new Error(
        `The KV pool of the ${pool.layers.length} layers with sliding window ${pool.window} needs ${w.least} blocks for one sequence, ` +
          `but has ${pool.numBlocks} (${pool.numBlocks * groupBytes[g]} bytes). Raise --kv-cache-memory or lower --max-num-batched-tokens.`,
      );
    }
  }
  const totalBytes = pools.reduce((n, pool, g) => n + pool.numBlocks * groupBytes[g], 0);
  // Encoder-decoder sequences also hold their cross-attention K/V (encoder blocks) for their whole life.
  const capacity = fullGroup ? (numBlocks - encoderBlocks) * blockSize : maxModelLen;
  if (capacity < maxModelLen) {
    if (options.maxModelLen !== null || capacity < 1) {
      throw new Error(
        `To serve at least one request with max_model_len ${maxModelLen}, the KV cache needs ${(Math.ceil(maxModelLen / blockSize) + encoderBlocks) * bytesPerBlock} bytes, ` +
          `but only ${numBlocks * bytesPerBlock} bytes (${capacity} tokens) are available. ` +
          'Raise --kv-cache-memory or lower --max-model-len.',
      );
    }
    maxModelLen = capacity;
  }
  return { numBlocks, maxModelLen, bytesPerBlock, pools, totalBytes };
}

/** The bytes the KV cache may take, and whether more blocks than a full batch could use are dropped (the derived budgets). */
function kvBudget(options: KvPlanOptions, memory: MemoryInfo): { bytes: number; capped: boolean; fromUtilization: boolean } {
  if (options.kvCacheMemoryBytes !== null) return { bytes: options.kvCacheMemoryBytes, capped: false, fromUtilization: false };
  if (options.gpuMemoryUtilization != null) {
    if (memory.totalBytes === null) {
      throw new Error('--gpu-memory-utilization: the device memory could not be read (nvidia-smi failed); give --kv-cache-memory-bytes instead.');
    }
    return { bytes: Math.max(0, options.gpuMemoryUtilization * memory.totalBytes - memory.usedBytes), capped: true, fromUtilization: true };
  }
  return { bytes: memory.freeBytes * AUTO_KV_MEMORY_FRACTION, capped: true, fromUtilization: false };
}

/**
 * Blocks of a windowed pool: `least` for one sequence computing its largest chunk, `wanted` for
 * `seqs` sequences at their window plus one step's new tokens (never more than they would hold
 * without the window).
 */
function windowedPoolSize(window: number, options: KvPlanOptions, maxModelLen: number, seqs: number): { least: number; wanted: number } {
  const bs = options.blockSize;
  const unwindowed = Math.ceil(maxModelLen / bs);
  const least = Math.min(unwindowed, windowBlocksPerSequence(window, bs, Math.min(options.maxNumBatchedTokens, maxModelLen)));
  const batch = seqs * (windowBlocksPerSequence(window, bs, 1) + 1) + Math.ceil(options.maxNumBatchedTokens / bs);
  return { least, wanted: Math.max(least, Math.min(seqs * unwindowed, batch)) };
}

/** Sequences of max_model_len the budget holds with their full blocks in pool 0 and their windows in the windowed pools (1 .. max-num-seqs). */
function sequencesInBudget(bytes: number, groups: readonly KvLayerGroup[], groupBytes: readonly number[], options: KvPlanOptions, maxModelLen: number): number {
  const bs = options.blockSize;
  const fullBlocks = Math.ceil(maxModelLen / bs);
  let perSequence = fullBlocks * groupBytes[0];
  let fixed = 0;
  groups.forEach((group, g) => {
    if (g === 0 || group.window === 0) return;
    perSequence += Math.min(fullBlocks, windowBlocksPerSequence(group.window, bs, 1) + 1) * groupBytes[g];
    fixed += Math.ceil(options.maxNumBatchedTokens / bs) * groupBytes[g];
  });
  return Math.max(1, Math.min(options.maxNumSeqs, Math.floor((bytes - fixed) / perSequence)));
}

/** The start-up log's words for the pools: "N blocks" for one full-attention pool, else each pool's blocks and layers. */
export function describePools(pools: readonly KvPool[]): string {
  if (!poolsDifferFromOne(pools)) return `${pools[0].numBlocks} blocks`;
  return pools
    .map((p) => `${p.numBlocks} blocks for ${p.layers.length} ${p.window > 0 ? `sliding-window (${p.window}) layers` : 'full-attention layers'}`)
    .join(' + ');
}
