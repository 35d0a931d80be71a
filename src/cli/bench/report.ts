// `bench serve`'s metrics and report, in vLLM's terms: throughput, TTFT / TPOT / ITL / E2EL
// mean, median, std and the asked percentiles (numpy's linear interpolation), the peak output
// tokens per second and concurrency (1-second buckets), printed in vLLM's layout.

import type { BenchRequestOutput } from './request';

export interface BenchMetricsInput {
  outputs: BenchRequestOutput[];
  /** The dataset's prompt lengths (used where the server reported none). */
  promptLens: number[];
  durationS: number;
  percentiles: number[];
  percentileMetrics: string[];
}

/** numpy.percentile (linear). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const at = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

const mean = (v: number[]): number => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : 0);
const std = (v: number[]): number => {
  if (!v.length) return 0;
  const m = mean(v);
  return Math.sqrt(mean(v.map((x) => (x - m) ** 2)));
};

const METRICS: Array<[key: string, label: string, header: string]> = [
  ['ttft', 'TTFT', 'Time to First Token'],
  ['tpot', 'TPOT', 'Time per Output Token (excl. 1st token)'],
  ['itl', 'ITL', 'Inter-token Latency'],
  ['e2el', 'E2EL', 'End-to-end Latency'],
];

export function computeResult(input: BenchMetricsInput): Record<string, unknown> {
  const ok = input.outputs.filter((o) => o.success);
  const promptLen = (i: number) => input.outputs[i].promptLen ?? input.promptLens[i];
  const inputLens = input.outputs.map((_, i) => promptLen(i));
  const outputLens = input.outputs.map((o) => (o.success ? o.outputTokens : 0));
  const totalInput = input.outputs.reduce((s, o, i) => s + (o.success ? promptLen(i) : 0), 0);
  const totalOutput = outputLens.reduce((a, b) => a + b, 0);
  const series: Record<string, number[]> = {
    ttft: ok.map((o) => o.ttft),
    tpot: ok.filter((o) => o.outputTokens > 1).map((o) => (o.latency - o.ttft) / (o.outputTokens - 1)),
    itl: ok.flatMap((o) => o.itl),
    e2el: ok.map((o) => o.latency),
  };
  const peak = peakRates(ok);
  const result: Record<string, unknown> = {
    duration: input.durationS,
    completed: ok.length,
    failed: input.outputs.length - ok.length,
    total_input_tokens: totalInput,
    total_output_tokens: totalOutput,
    request_throughput: ok.length / input.durationS,
    request_goodput: null,
    output_throughput: totalOutput / input.durationS,
    total_token_throughput: (totalInput + totalOutput) / input.durationS,
    max_output_tokens_per_s: peak.tokens,
    max_concurrent_requests: peak.concurrent,
    input_lens: inputLens,
    output_lens: outputLens,
    ttfts: input.outputs.map((o) => o.ttft),
    itls: input.outputs.map((o) => o.itl),
    generated_texts: input.outputs.map((o) => o.generatedText),
    errors: input.outputs.map((o) => o.error),
  };
  for (const [key] of METRICS) {
    if (!input.percentileMetrics.includes(key)) continue;
    const ms = series[key].map((s) => s * 1000);
    result[`mean_${key}_ms`] = mean(ms);
    result[`median_${key}_ms`] = percentile(ms, 50);
    result[`std_${key}_ms`] = std(ms);
    for (const p of input.percentiles) result[`p${p}_${key}_ms`] = percentile(ms, p);
  }
  return result;
}

/** vLLM's peak output tokens per second and concurrent requests, over 1-second buckets. */
function peakRates(ok: BenchRequestOutput[]): { tokens: number; concurrent: number } {
  if (ok.length === 0) return { tokens: 0, concurrent: 0 };
  const t0 = Math.min(...ok.map((o) => o.startTime));
  const end = Math.max(...ok.map((o) => o.startTime + o.latency));
  const buckets = Math.ceil(end - t0) + 1;
  const tokens = new Array<number>(buckets).fill(0);
  const concurrent = new Array<number>(buckets).fill(0);
  for (const o of ok) {
    let t = o.startTime + o.ttft;
    const times = [t, ...o.itl.map((gap) => (t += gap))];
    for (const time of times) tokens[Math.min(buckets - 1, Math.floor(time - t0))]++;
    for (let s = Math.floor(o.startTime - t0); s <= Math.floor(o.startTime + o.latency - t0); s++) concurrent[s]++;
  }
  return { tokens: Math.max(...tokens), concurrent: Math.max(...concurrent) };
}

const row = (label: string, value: number | string, digits = 2): string =>
  `${label.padEnd(40)} ${typeof value === 'number' && !Number.isInteger(value) ? value.toFixed(digits) : String(value)}`;
const centered = (text: string, fill: string): string => {
  const left = Math.floor((50 - text.length) / 2);
  return fill.repeat(Math.max(0, left)) + text + fill.repeat(Math.max(0, 50 - text.length - left));
};

/** The report `vllm bench serve` prints. */
export function formatReport(result: Record<string, unknown>, run: { maxConcurrency: number | null; requestRate: number; percentileMetrics: string[]; percentiles: number[] }): string {
  const n = (key: string): number => Number(result[key]);
  const f = (key: string): string => n(key).toFixed(2);
  const lines = [centered(' Serving Benchmark Result ', '='), row('Successful requests:', n('completed')), row('Failed requests:', n('failed'))];
  if (run.maxConcurrency !== null) lines.push(row('Maximum request concurrency:', run.maxConcurrency));
  if (Number.isFinite(run.requestRate)) lines.push(row('Request rate configured (RPS):', run.requestRate.toFixed(2)));
  lines.push(
    row('Benchmark duration (s):', f('duration')),
    row('Total input tokens:', n('total_input_tokens')),
    row('Total generated tokens:', n('total_output_tokens')),
    row('Request throughput (req/s):', f('request_throughput')),
    row('Output token throughput (tok/s):', f('output_throughput')),
    row('Peak output token throughput (tok/s):', f('max_output_tokens_per_s')),
    row('Peak concurrent requests:', f('max_concurrent_requests')),
    row('Total token throughput (tok/s):', f('total_token_throughput')),
  );
  for (const [key, label, header] of METRICS) {
    if (!run.percentileMetrics.includes(key)) continue;
    lines.push(centered(header, '-'), row(`Mean ${label} (ms):`, f(`mean_${key}_ms`)), row(`Median ${label} (ms):`, f(`median_${key}_ms`)));
    for (const p of run.percentiles) lines.push(row(`P${p} ${label} (ms):`, f(`p${p}_${key}_ms`)));
  }
  lines.push('='.repeat(50));
  return lines.join('\n');
}
