// Runs work while probing /health, to check that the server stayed responsive: the slowest probe
// within `slackMs` (200 ms) of the slowest one in a baseline taken just before with nothing else
// in flight (the machine is shared and busy, so an absolute bound would measure the neighbours).

import { HealthProbe } from './health-probe';

export const HEALTH_SLACK_MS = 200;

export interface Responsiveness {
  slowestMs: number;
  baselineMs: number;
}

export async function probed<T>(probe: HealthProbe, work: () => Promise<T>): Promise<{ result: T; health: Responsiveness }> {
  const baseline = await probe.baseline(1000);
  const { result, report } = await probe.during(work());
  return { result, health: { slowestMs: Math.round(report.max), baselineMs: Math.round(baseline.max) } };
}

export function expectResponsive(health: Responsiveness, slackMs = HEALTH_SLACK_MS): void {
  expect({ ...health, within: health.slowestMs <= health.baselineMs + slackMs }).toEqual({ ...health, within: true });
}

/** probed + expectResponsive. */
export async function whileResponsive<T>(probe: HealthProbe, work: () => Promise<T>, slackMs = HEALTH_SLACK_MS): Promise<T> {
  const { result, health } = await probed(probe, work);
  expectResponsive(health, slackMs);
  return result;
}
