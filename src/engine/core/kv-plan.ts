// How big the paged KV cache is (blocks) and the effective max_model_len, from the flags
// (--num-gpu-blocks-override, --kv-cache-memory-bytes, --gpu-memory-utilization) and the memory
// the machine has.

import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { encoderSpecOf } from '../../model/encoder-spec';
import { kvBytesPerBlock } from '../../model/runner';
import type { KvStorageDtype } from '../../model/runner/kv-dtype';
import type { LoadedModel } from '../../model/types';
import type { EngineOptions } from '../types';

/** Share of free memory the KV cache takes when --kv-cache-memory is not given. */
const AUTO_KV_MEMORY_FRACTION = 0.2;

export interface KvPlan {
  numBlocks: number;
  maxModelLen: number;
  bytesPerBlock: number;
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

/**
 * Decides the number of KV blocks and the effective max_model_len. An explicit budget
 * that cannot hold one max_model_len sequence is a start-up error (as in vLLM); a derived
 * max_model_len is lowered to what the cache holds instead. Budget, in order: --num-gpu-blocks-override,
 * --kv-cache-memory-bytes, --gpu-memory-utilization × total memory − memory in use, else a share of free memory.
 */
/** The engine options with --kv-cache-dtype resolved to what the cache stores (absent: float32). */
export type KvPlanOptions = Omit<EngineOptions, 'kvCacheDtype'> & { kvCacheDtype?: KvStorageDtype };

export function planKvCache(model: LoadedModel, options: KvPlanOptions, memory: MemoryInfo = readMemoryInfo(model, options.device)): KvPlan {
  const blockSize = options.blockSize;
  const bytesPerBlock = kvBytesPerBlock(model.config, blockSize, options.kvCacheDtype ?? 'float32');
  const encoderBlocks = encoderBlocksOf(model, blockSize);
  let maxModelLen = options.maxModelLen ?? model.contextLength;
  if (options.maxModelLen !== null && options.maxModelLen > model.contextLength) {
    throw new Error(
      `max_model_len ${options.maxModelLen} is larger than the model's context length ${model.contextLength}.`,
    );
  }
  let numBlocks: number;
  if (options.numBlocksOverride != null) {
    numBlocks = options.numBlocksOverride;
  } else if (options.kvCacheMemoryBytes !== null) {
    numBlocks = Math.floor(options.kvCacheMemoryBytes / bytesPerBlock);
  } else if (options.gpuMemoryUtilization != null) {
    if (memory.totalBytes === null) {
      throw new Error('--gpu-memory-utilization: the device memory could not be read (nvidia-smi failed); give --kv-cache-memory-bytes instead.');
    }
    const budget = options.gpuMemoryUtilization * memory.totalBytes - memory.usedBytes;
    // Capped, as the default is, at what a full batch of max-length sequences could use.
    numBlocks = Math.min(usefulBlocks(options, maxModelLen, encoderBlocks), Math.floor(Math.max(0, budget) / bytesPerBlock));
    if (numBlocks < 1) {
      throw new Error(
        `--gpu-memory-utilization ${options.gpuMemoryUtilization} leaves no memory for the KV cache: ` +
          `${(options.gpuMemoryUtilization * memory.totalBytes / 2 ** 30).toFixed(2)} GiB allowed, ${(memory.usedBytes / 2 ** 30).toFixed(2)} GiB already used. Raise it.`,
      );
    }
  } else {
    numBlocks = Math.min(usefulBlocks(options, maxModelLen, encoderBlocks), Math.floor((memory.freeBytes * AUTO_KV_MEMORY_FRACTION) / bytesPerBlock));
  }
  if (numBlocks < 1) {
    throw new Error(`KV cache budget is smaller than one block (${bytesPerBlock} bytes); raise --kv-cache-memory.`);
  }
  // Encoder-decoder sequences also hold their cross-attention K/V (encoder blocks) for their whole life.
  const capacity = (numBlocks - encoderBlocks) * blockSize;
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
  return { numBlocks, maxModelLen, bytesPerBlock };
}
