// Readers of VLLM_* variable values (vLLM's spellings), for the env bindings in flags.ts.

import type { LogLevel } from './flag-values';

export const truthy = (value: string): boolean => ['1', 'true', 'yes'].includes(value.trim().toLowerCase());

export function positiveNumberEnv(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got '${value}'`);
  return n;
}

/** Python logging's level names, as VLLM_LOGGING_LEVEL takes them. */
export const LOGGING_LEVELS: Record<string, LogLevel> = {
  CRITICAL: 'critical',
  ERROR: 'error',
  WARNING: 'warning',
  WARN: 'warning',
  INFO: 'info',
  DEBUG: 'debug',
};

/** Cores in a Linux CPU list ("0-3,8,10-11"). */
export function countCpuList(list: string): number {
  let n = 0;
  for (const part of list.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(part);
    if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1]))) throw new Error(`VLLM_CPU_OMP_THREADS_BIND must be auto, nobind or a CPU list such as 0-3,8, got '${list}'`);
    n += m[2] === undefined ? 1 : Number(m[2]) - Number(m[1]) + 1;
  }
  return n;
}
