// vLLM's environment variables that mean something here, each mapped onto ServerConfig. Flags
// win over the environment (resolveServerConfig applies these first). Adding one is one entry.
// Any other VLLM_* variable that is set gets one startup line saying it has no effect.

import type { LogLevel, ServerConfig } from './server-config';

export interface VllmEnvVar {
  name: string;
  /** What it does here (README's table). */
  meaning: string;
  /** The config fields it sets, given the flags (it must not override a flag). */
  apply(value: string, flags: Partial<ServerConfig>): Partial<ServerConfig>;
}

const truthy = (value: string): boolean => ['1', 'true', 'yes'].includes(value.trim().toLowerCase());

function positiveNumber(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got '${value}'`);
  return n;
}

const LOGGING_LEVELS: Record<string, LogLevel> = {
  CRITICAL: 'critical',
  ERROR: 'error',
  WARNING: 'warning',
  WARN: 'warning',
  INFO: 'info',
  DEBUG: 'debug',
};

export const VLLM_ENV_VARS: VllmEnvVar[] = [
  { name: 'VLLM_API_KEY', meaning: 'API key when no --api-key is given', apply: (v) => (v ? { apiKeys: [v] } : {}) },
  {
    name: 'VLLM_SERVER_DEV_MODE',
    meaning: '1 registers /reset_prefix_cache, /server_info, /sleep, /wake_up, /is_sleeping, /collective_rpc',
    apply: (v) => ({ devMode: truthy(v) }),
  },
  {
    name: 'VLLM_LOGGING_LEVEL',
    meaning: 'Log level (DEBUG, INFO, WARNING, ERROR, CRITICAL) when no --uvicorn-log-level / --log-level is given',
    apply: (v) => {
      const level = LOGGING_LEVELS[v.trim().toUpperCase()];
      if (!level) throw new Error(`VLLM_LOGGING_LEVEL must be one of ${Object.keys(LOGGING_LEVELS).join(', ')}, got '${v}'`);
      return { logLevel: level };
    },
  },
  {
    name: 'VLLM_LOG_STATS_INTERVAL',
    meaning: 'Seconds between throughput log lines (default 10; --disable-log-stats turns them off)',
    apply: (v) => ({ logStatsIntervalSeconds: positiveNumber('VLLM_LOG_STATS_INTERVAL', v) }),
  },
  {
    name: 'VLLM_HTTP_TIMEOUT_KEEP_ALIVE',
    meaning: 'Seconds an idle keep-alive connection stays open',
    apply: (v) => ({ keepAliveTimeoutSeconds: positiveNumber('VLLM_HTTP_TIMEOUT_KEEP_ALIVE', v) }),
  },
  {
    name: 'VLLM_MAX_AUDIO_CLIP_FILESIZE_MB',
    meaning: 'Largest audio upload of /v1/audio/* in MiB when no --max-audio-clip-filesize-mb is given (default 25)',
    apply: (v) => ({ maxAudioClipFilesizeMb: positiveNumber('VLLM_MAX_AUDIO_CLIP_FILESIZE_MB', v) }),
  },
  {
    name: 'VLLM_CPU_KVCACHE_SPACE',
    meaning: 'KV cache budget in GiB on --device cpu when neither --kv-cache-memory-bytes nor --gpu-memory-utilization is given',
    apply: (v, flags) =>
      (flags.device ?? 'cpu') === 'cpu' && flags.gpuMemoryUtilization === undefined && Number(v) !== 0
        ? { kvCacheMemoryBytes: Math.floor(positiveNumber('VLLM_CPU_KVCACHE_SPACE', v) * 2 ** 30) }
        : {},
  },
  {
    name: 'VLLM_CPU_OMP_THREADS_BIND',
    meaning: 'CPU cores of the forward pass, e.g. 0-3 or 0,2,4 (the first | group): its core count sets the thread count (threads are not pinned); auto or nobind = the default (every core)',
    apply: (v) => {
      const group = v.split('|')[0].trim();
      if (group === 'auto' || group === 'nobind' || group === '') return {};
      return { cpuThreads: countCpuList(group) };
    },
  },
];

/** Cores in a Linux CPU list ("0-3,8,10-11"). */
function countCpuList(list: string): number {
  let n = 0;
  for (const part of list.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(part);
    if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1]))) throw new Error(`VLLM_CPU_OMP_THREADS_BIND must be auto, nobind or a CPU list such as 0-3,8, got '${list}'`);
    n += m[2] === undefined ? 1 : Number(m[2]) - Number(m[1]) + 1;
  }
  return n;
}

/** The config fields the environment sets; throws (ConfigError upstream) on a malformed value. */
export function fromVllmEnv(env: NodeJS.ProcessEnv, flags: Partial<ServerConfig>): Partial<ServerConfig> {
  const out: Partial<ServerConfig> = {};
  for (const variable of VLLM_ENV_VARS) {
    const value = env[variable.name];
    if (value === undefined || value === '') continue;
    Object.assign(out, variable.apply(value, flags));
  }
  return out;
}

/** VLLM_* variables that are set but mean nothing here (one startup line names them). */
export function unusedVllmEnv(env: NodeJS.ProcessEnv): string[] {
  const known = new Set(VLLM_ENV_VARS.map((v) => v.name));
  return Object.keys(env)
    .filter((name) => name.startsWith('VLLM_') && !known.has(name))
    .sort();
}
