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

/** The ranges [first, last] of a Linux CPU list ("0-3,8,10-11"), in its order. */
export function cpuListRanges(list: string): Array<[number, number]> {
  return list.split(',').map((part) => {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(part);
    if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1]))) throw new Error(`VLLM_CPU_OMP_THREADS_BIND must be auto, nobind or a CPU list such as 0-3,8, got '${list}'`);
    return [Number(m[1]), Number(m[2] ?? m[1])];
  });
}

/** Cores in a Linux CPU list ("0-3,8,10-11"). */
export function countCpuList(list: string): number {
  return cpuListRanges(list).reduce((n, [first, last]) => n + last - first + 1, 0);
}

/** Most CPUs a notice names before it elides the rest. */
const NAMED_CPUS = 8;

/**
 * A startup notice when VLLM_CPU_OMP_THREADS_BIND's first group names CPUs outside `allowed` (this
 * process's CPUs, a CPU list as /proc/self/status gives it): only its count is used, so "2" on a
 * two-core machine (CPU 2, not two CPUs) runs one thread where two were meant. Null when the
 * variable is unset, auto or nobind, or every CPU it names is allowed.
 */
export function cpuBindNotice(value: string | undefined, allowed: string | null): string | null {
  const group = value?.split('|')[0].trim();
  if (!group || group === 'auto' || group === 'nobind' || allowed === null) return null;
  const usable = cpuListRanges(allowed);
  const outside: number[] = [];
  // Stops at the first NAMED_CPUS + 1 outside: a range of a million CPUs is not walked.
  for (const [first, last] of cpuListRanges(group))
    for (let cpu = first; cpu <= last && outside.length <= NAMED_CPUS; cpu++) if (!usable.some(([a, b]) => cpu >= a && cpu <= b)) outside.push(cpu);
  if (outside.length === 0) return null;
  const named = outside.length > NAMED_CPUS ? `${outside.slice(0, NAMED_CPUS).join(', ')}, ...` : outside.join(', ');
  const threads = countCpuList(group);
  return (
    `VLLM_CPU_OMP_THREADS_BIND=${value} names CPU ${named}, which this process cannot run on (its CPUs: ${allowed}); ` +
    `it is a CPU list, not a thread count: the forward pass runs ${threads} thread${threads === 1 ? '' : 's'}`
  );
}
