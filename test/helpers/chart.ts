// The chart renderer for tests (helm, or scripts/chart-render built from Debian's Go packages):
// where neither can run, the tests register as skipped with the reason in their title.
import { findRenderer, type ChartRenderer } from '../../scripts/chart-renderer';

export type UsableRenderer = ChartRenderer & { binary: string };

export function chartRenderer(): { renderer: UsableRenderer | null; describe: (name: string, fn: () => void) => void } {
  const found = findRenderer();
  if (found.name) return { renderer: found, describe };
  console.warn(`\n*** SKIPPING the chart rendering tests: ${found.reason} ***\n`);
  return { renderer: null, describe: (name, fn) => describe.skip(`${name} [skipped: ${found.reason}]`, fn) };
}
