export type ChartRenderer = { name: 'helm' | 'chart-render'; binary: string } | { name: null; reason: string };
export interface RenderOptions {
  valuesFiles?: string[];
  set?: string[];
  namespace?: string;
  apiVersions?: string[];
  showOnly?: string[];
}
export function findRenderer(): ChartRenderer;
export function missingGoPackages(): string[];
export function renderChart(
  renderer: ChartRenderer & { binary: string },
  release: string,
  chartDir: string,
  options?: RenderOptions,
): { ok: boolean; stdout: string; stderr: string };
export function mergedValues(
  renderer: ChartRenderer & { binary: string },
  release: string,
  chartDir: string,
  options?: RenderOptions,
): Record<string, unknown> | null;
