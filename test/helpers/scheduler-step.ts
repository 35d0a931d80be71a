// One scheduler step with a stand-in for the model: every sequence due for sampling gets token 7.
import type { Scheduler, SchedulePlan } from '../../src/engine/core/scheduler';

export function stepScheduler(scheduler: Scheduler): SchedulePlan {
  const plan = scheduler.schedule();
  const sampled = new Map<string, number>();
  for (const s of plan.scheduled) if (s.sample) sampled.set(s.seq.seqId, 7);
  scheduler.updateFromOutput(plan, sampled);
  return plan;
}
