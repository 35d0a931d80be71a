// onnxruntime's profile (enableProfiling's JSON events) summed per ONNX op type over chosen runs:
// bench/profile.ts for runner steps, bench/vision-profile.ts for the vision towers.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface ProfileEvent {
  cat: string;
  name: string;
  ts: number;
  dur: number;
  args?: { op_name?: string };
}

/** Op-type totals (ms) of the model runs whose index is in `runs`. */
export function summarize(events: ProfileEvent[], runs: Set<number>): { total: number; byOp: Map<string, number> } {
  const windows = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  const chosen = windows.filter((_, i) => runs.has(i));
  const byOp = new Map<string, number>();
  let total = 0;
  for (const w of chosen) total += w.dur / 1000;
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    if (!chosen.some((w) => e.ts >= w.ts && e.ts <= w.ts + w.dur)) continue;
    const op = e.args?.op_name ?? '?';
    byOp.set(op, (byOp.get(op) ?? 0) + e.dur / 1000);
  }
  return { total, byOp };
}

export function print(title: string, runs: number, s: { total: number; byOp: Map<string, number> }): void {
  console.log(`\n${title}: ${(s.total / runs).toFixed(1)} ms per run (${runs} runs)`);
  const rows = [...s.byOp.entries()].sort((a, b) => b[1] - a[1]);
  const kernels = rows.reduce((n, [, ms]) => n + ms, 0);
  for (const [op, ms] of rows.slice(0, 14)) {
    console.log(`  ${op.padEnd(34)} ${(ms / runs).toFixed(2).padStart(9)} ms  ${((100 * ms) / s.total).toFixed(1).padStart(5)}%`);
  }
  console.log(`  ${'(outside kernels)'.padEnd(34)} ${((s.total - kernels) / runs).toFixed(2).padStart(9)} ms`);
}

/** The events of the profile a session wrote as `<dir>/<prefix>_<date>.json` (the binding does not return the name); the file is removed. */
export function takeProfile(dir: string, prefix: string): ProfileEvent[] {
  const file = join(dir, readdirSync(dir).find((f) => f.startsWith(prefix))!);
  const events = JSON.parse(readFileSync(file, 'utf8')) as ProfileEvent[];
  rmSync(file, { force: true });
  return events;
}
