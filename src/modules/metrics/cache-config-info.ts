// vllm:cache_config_info's labels: every field of vLLM's CacheConfig, valued as Python's str()
// prints them ("None", "True", "0.9"), with what applies here (no swap, no offload). cache_dtype is
// the flag as given (vLLM's CacheConfig keeps 'auto' too); the engine's start-up line names the stored type.

import type { ServerConfig } from '../../config/server-config';
import type { SchedulerStats } from '../../engine/types';

const py = (value: string | number | boolean | null): string => (value === null ? 'None' : typeof value === 'boolean' ? (value ? 'True' : 'False') : String(value));

export function cacheConfigInfo(config: ServerConfig, stats: SchedulerStats): Record<string, string> {
  return {
    engine: '0',
    block_size: py(stats.blockSize),
    gpu_memory_utilization: py(config.gpuMemoryUtilization),
    swap_space: py(0),
    cache_dtype: py(config.kvCacheDtype),
    is_attention_free: py(false),
    num_gpu_blocks_override: py(config.numGpuBlocksOverride),
    sliding_window: py(null),
    enable_prefix_caching: py(config.enablePrefixCaching),
    prefix_caching_hash_algo: 'sha256',
    cpu_offload_gb: py(0),
    calculate_kv_scales: py(false),
    cpu_kvcache_space_bytes: py(config.device === 'cpu' ? config.kvCacheMemoryBytes : null),
    mamba_page_size_padded: py(null),
    mamba_block_size: py(null),
    mamba_cache_dtype: 'auto',
    mamba_ssm_cache_dtype: 'auto',
    num_gpu_blocks: py(stats.numBlocks),
    num_cpu_blocks: py(null),
    kv_sharing_fast_prefill: py(false),
    kv_cache_memory_bytes: py(config.kvCacheMemoryBytes),
    kv_offloading_size: py(null),
    kv_offloading_backend: py(null),
  };
}
