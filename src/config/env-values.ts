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

/** The CPUs a Linux CPU list ("0-3,8,10-11") names, in its order. */
export function cpuListMembers(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(part);
    if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1]))) throw new Error(`VLLM_CPU_OMP_THREADS_BIND must be auto, nobind or a CPU list such as 0-3,8, got '${list}'`);
    for (let cpu = Number(m[1]); cpu <= Number(m[2] ?? m[1]); cpu++) cpus.push(cpu);
  }
  return cpus;
}

/** Cores in a Linux CPU list ("0-3,8,10-11"). */
export function countCpuList(list: string): number {
  return cpuListMembers(list).length;
}

/**
 * A startup notice when VLLM_CPU_OMP_THREADS_BIND's first group names CPUs outside `allowed` (this
 * process's CPUs, a CPU list as /proc/self/status gives it): only its count is used, so "2" on a
 * two-core machine (CPU 2, not two CPUs) runs one thread where two were meant. Null when the
 * variable is unset, auto or nobind, or every CPU it names is allowed.
 */
export function cpuBindNotice(value: string | undefined, allowed: string | null): string | null {
  const group = value?.split('|')[0].trim();
  if (!group || group === 'auto' || group === 'nobind' || allowed === null) return null;
  const usable = new Set(cpuListMembers(allowed));
  const outside = cpuListMembers(group).filter((cpu) => !usable.has(cpu));
  if (outside.length === 0) return null;
  const threads = countCpuList(group);
  return (
    `VLLM_CPU_OMP_THREADS_BIND=${value} names CPU ${outside.join(', ')}, which this process cannot run on (its CPUs: ${allowed}); ` +
    `it is a CPU list, not a thread count: the forward pass runs ${threads} thread${threads === 1 ? '' : 's'}`
  );
}
