// VLLM_CPU_OMP_THREADS_BIND is a CPU list whose count sets the forward pass's threads: a list
// naming CPUs the process cannot run on ("2" meant as two threads on a two-core machine) gets a
// startup notice saying how many threads it gives.
import { countCpuList, cpuBindNotice, cpuListRanges } from '../../../src/config/env-values';

describe('VLLM_CPU_OMP_THREADS_BIND', () => {
  it('reads CPU lists as Linux writes them', () => {
    expect(cpuListRanges('0-3,8,10-11')).toEqual([[0, 3], [8, 8], [10, 11]]);
    expect(countCpuList('0-3,8,10-11')).toBe(7);
    expect(countCpuList('2')).toBe(1);
    expect(() => cpuListRanges('3-1')).toThrow(/must be auto, nobind or a CPU list/);
  });

  it('names the CPUs outside the process and the thread count they give', () => {
    expect(cpuBindNotice('2', '0-1')).toBe(
      'VLLM_CPU_OMP_THREADS_BIND=2 names CPU 2, which this process cannot run on (its CPUs: 0-1); it is a CPU list, not a thread count: the forward pass runs 1 thread',
    );
    expect(cpuBindNotice('0-3|4-7', '0-1,4')).toMatch(/names CPU 2, 3, which .* runs 4 threads$/);
    // A huge range is counted, not walked: the notice names the first eight outside.
    expect(cpuBindNotice('0-99999999', '0-1')).toMatch(/names CPU 2, 3, 4, 5, 6, 7, 8, 9, \.\.\., which .* runs 100000000 threads$/);
  });

  it('is silent for lists within the process, auto, nobind, unset, or an unknown CPU set', () => {
    expect(cpuBindNotice('0-1', '0-1')).toBeNull();
    expect(cpuBindNotice('4,6', '0-7')).toBeNull();
    expect(cpuBindNotice('auto', '0-1')).toBeNull();
    expect(cpuBindNotice('nobind', '0-1')).toBeNull();
    expect(cpuBindNotice(undefined, '0-1')).toBeNull();
    expect(cpuBindNotice('2', null)).toBeNull();
  });
});
