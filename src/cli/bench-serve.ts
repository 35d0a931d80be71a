// `ortllm bench serve`: vLLM's `vllm bench serve` for any OpenAI-compatible server (ortllm,
// vLLM, llama-server). Builds the dataset, sends one test request, optional warm-ups, then all
// requests at --request-rate (gamma/Poisson arrivals) under --max-concurrency, and prints
// vLLM's report; --save-result / --result-file write vLLM's result JSON. `npm run bench` uses
// runBenchmark() directly.

import { Presets, SingleBar } from 'cli-progress';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer } from '../model/load-model';
import { arrivalOffsets } from './bench/arrivals';
import { customDataset, randomDataset, type SampleRequest } from './bench/datasets';
import { computeResult, formatReport } from './bench/report';
import { sendBenchRequest, type BenchRequestInput, type BenchRequestOutput } from './bench/request';
import { CommandError } from './program';

export interface BenchOptions {
  backend: 'openai' | 'vllm' | 'openai-chat';
  baseUrl: string;
  endpoint?: string;
  model?: string;
  apiKey?: string;
  tokenizer?: string;
  datasetName: 'random' | 'custom';
  datasetPath?: string;
  numPrompts: number;
  randomInputLen: number;
  randomOutputLen: number;
  randomRangeRatio: number;
  randomPrefixLen: number;
  customOutputLen: number;
  requestRate: number;
  burstiness: number;
  maxConcurrency: number | null;
  numWarmups: number;
  seed: number;
  ignoreEos: boolean;
  temperature?: number;
  topP?: number;
  topK?: number;
  percentileMetrics: string[];
  percentiles: number[];
  disableProgress: boolean;
  /** Printed lines (default: stdout). */
  print?: (line: string) => void;
}

export interface BenchRun {
  result: Record<string, unknown>;
  report: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function firstServedModel(baseUrl: string, headers: Record<string, string>): Promise<string> {
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/v1/models`, { headers });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    throw new CommandError(`cannot reach ${baseUrl}: ${cause?.message ?? (err as Error).message}`);
  }
  const body = (await res.json().catch(() => null)) as { data?: Array<{ id: string }> } | null;
  const id = body?.data?.[0]?.id;
  if (!res.ok || !id) throw new CommandError(`${baseUrl}/v1/models named no model (HTTP ${res.status}); give --model`);
  return id;
}

async function buildDataset(o: BenchOptions, model: string): Promise<SampleRequest[]> {
  if (o.datasetName === 'custom') {
    if (!o.datasetPath) throw new CommandError('--dataset-name custom needs --dataset-path FILE.jsonl');
    try {
      return customDataset(o.datasetPath, o.numPrompts, o.customOutputLen);
    } catch (err) {
      throw new CommandError((err as Error).message);
    }
  }
  // vLLM's default tokenizer is the model's: here the served name is often the model's path.
  const path = o.tokenizer ?? model;
  let tokenizer;
  try {
    tokenizer = (await loadTokenizer(path)).tokenizer;
  } catch (err) {
    throw new CommandError(`the random dataset needs the model's tokenizer: ${(err as Error).message}. Give --tokenizer PATH (GGUF file or HF directory) or use --dataset-name custom`);
  }
  return randomDataset(tokenizer, {
    numPrompts: o.numPrompts,
    inputLen: o.randomInputLen,
    outputLen: o.randomOutputLen,
    rangeRatio: o.randomRangeRatio,
    prefixLen: o.randomPrefixLen,
    seed: o.seed,
  });
}

export async function runBenchmark(o: BenchOptions): Promise<BenchRun> {
  const print = o.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const apiKey = o.apiKey ?? process.env.OPENAI_API_KEY ?? process.env.VLLM_API_KEY;
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const chat = o.backend === 'openai-chat';
  const url = `${o.baseUrl}${o.endpoint ?? (chat ? '/v1/chat/completions' : '/v1/completions')}`;
  const model = o.model ?? (await firstServedModel(o.baseUrl, headers));
  const dataset = await buildDataset(o, model);
  const extra: Record<string, unknown> = { temperature: o.temperature ?? 0 };
  if (o.topP !== undefined) extra.top_p = o.topP;
  if (o.topK !== undefined) extra.top_k = o.topK;
  if (o.ignoreEos) extra.ignore_eos = true;
  const input = (s: SampleRequest): BenchRequestInput => ({ url, chat, model, prompt: s.prompt, maxTokens: s.outputLen, headers, extra });

  print('Starting initial single prompt test run...');
  const test = await sendBenchRequest(input(dataset[0]));
  if (!test.success) throw new CommandError(`Initial test run failed - check the benchmark arguments. Error: ${test.error}`);
  print('Initial test run completed.');
  let limit = createLimiter(o.maxConcurrency);
  if (o.numWarmups > 0) {
    print(`Warming up with ${o.numWarmups} requests...`);
    await Promise.all(Array.from({ length: o.numWarmups }, () => limit(() => sendBenchRequest(input(dataset[0])))));
    print('Warmup run completed.');
  }

  print('Starting main benchmark run...');
  print(`Traffic request rate: ${Number.isFinite(o.requestRate) ? o.requestRate : 'inf'}`);
  print(`Burstiness factor: ${o.burstiness} (${o.burstiness === 1 ? 'Poisson process' : 'Gamma distribution'})`);
  print(`Maximum request concurrency: ${o.maxConcurrency ?? 'None'}`);
  const bar = o.disableProgress ? null : new SingleBar({ stream: process.stderr, noTTYOutput: true, notTTYSchedule: 5000, hideCursor: false }, Presets.legacy);
  bar?.start(dataset.length, 0);
  limit = createLimiter(o.maxConcurrency);
  const offsets = arrivalOffsets(dataset.length, o.requestRate, o.burstiness, o.seed);
  const start = performance.now();
  const outputs: BenchRequestOutput[] = await Promise.all(
    dataset.map(async (sample, i) => {
      const wait = start + offsets[i] * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
      const out = await limit(() => sendBenchRequest(input(sample)));
      bar?.increment();
      return out;
    }),
  );
  bar?.stop();
  const durationS = (performance.now() - start) / 1000;
  const result = computeResult({ outputs, promptLens: dataset.map((s) => s.promptLen), durationS, percentiles: o.percentiles, percentileMetrics: o.percentileMetrics });
  Object.assign(result, {
    date: new Date().toISOString(),
    backend: o.backend,
    model_id: model,
    tokenizer_id: o.tokenizer ?? model,
    num_prompts: o.numPrompts,
    request_rate: Number.isFinite(o.requestRate) ? o.requestRate : 'inf',
    burstiness: o.burstiness,
    max_concurrency: o.maxConcurrency,
  });
  const report = formatReport(result, { maxConcurrency: o.maxConcurrency, requestRate: o.requestRate, percentileMetrics: o.percentileMetrics, percentiles: o.percentiles });
  print(report);
  const failed = outputs.filter((x) => !x.success);
  if (failed.length > 0) print(`${failed.length} requests failed; first error: ${failed[0].error}`);
  return { result, report };
}

/** At most `n` calls running at once (null = unlimited). */
function createLimiter(n: number | null): <T>(fn: () => Promise<T>) => Promise<T> {
  if (n === null) return (fn) => fn();
  let running = 0;
  const queue: Array<() => void> = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running >= n) await new Promise<void>((r) => queue.push(r));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      queue.shift()?.();
    }
  };
}

/** The CLI: commander's options → BenchOptions; prints the report; writes the result JSON. */
export async function benchServe(opts: Record<string, unknown>): Promise<void> {
  const list = (v: unknown) => String(v).split(',').map((s) => s.trim()).filter(Boolean);
  const percentiles = list(opts.metricPercentiles).map(Number);
  if (percentiles.some((p) => !(p >= 0 && p <= 100))) throw new CommandError('--metric-percentiles takes numbers in 0..100, e.g. 50,90,99');
  const percentileMetrics = list(opts.percentileMetrics);
  const unknown = percentileMetrics.filter((m) => !['ttft', 'tpot', 'itl', 'e2el'].includes(m));
  if (unknown.length) throw new CommandError(`--percentile-metrics: unknown ${unknown.join(', ')} (ttft, tpot, itl, e2el)`);
  const outputLen = opts.outputLen as number | undefined;
  const { result } = await runBenchmark({
    backend: opts.backend as BenchOptions['backend'],
    baseUrl: ((opts.baseUrl as string | undefined) ?? `http://${opts.host as string}:${opts.port as number}`).replace(/\/$/, ''),
    endpoint: opts.endpoint as string | undefined,
    model: opts.model as string | undefined,
    apiKey: opts.apiKey as string | undefined,
    tokenizer: opts.tokenizer as string | undefined,
    datasetName: opts.datasetName as BenchOptions['datasetName'],
    datasetPath: opts.datasetPath as string | undefined,
    numPrompts: opts.numPrompts as number,
    randomInputLen: (opts.inputLen as number | undefined) ?? (opts.randomInputLen as number),
    randomOutputLen: outputLen ?? (opts.randomOutputLen as number),
    randomRangeRatio: opts.randomRangeRatio as number,
    randomPrefixLen: opts.randomPrefixLen as number,
    customOutputLen: outputLen ?? (opts.customOutputLen as number),
    requestRate: opts.requestRate as number,
    burstiness: opts.burstiness as number,
    maxConcurrency: (opts.maxConcurrency as number | undefined) ?? null,
    numWarmups: opts.numWarmups as number,
    seed: opts.seed as number,
    ignoreEos: Boolean(opts.ignoreEos),
    temperature: opts.temperature as number | undefined,
    topP: opts.topP as number | undefined,
    topK: opts.topK as number | undefined,
    percentileMetrics,
    percentiles,
    disableProgress: Boolean(opts.disableTqdm),
  });
  const file = opts.resultFile as string | undefined;
  if (file || opts.saveResult) {
    const label = (opts.label as string | undefined) ?? String(opts.backend);
    const name = (opts.resultFilename as string | undefined) ?? `${label}-${String(result.request_rate)}qps-${new Date().toISOString().replace(/[:.]/g, '')}.json`;
    const path = file ?? join((opts.resultDir as string | undefined) ?? '.', name);
    writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`Result written to ${path}\n`);
  }
}
