// vllm:lora_requests_info as vLLM's PrometheusStatLogger sets it: only with LoRA enabled, labels
// max_lora / waiting_lora_adapters / running_lora_adapters (comma-joined names), value the time
// of the step that reported that set; earlier sets stay with their older times.

import { Registry } from 'prom-client';
import { emptyIterationStats } from '../../../src/engine/core/engine-core';
import type { EngineClient, SchedulerStats } from '../../../src/engine/types';
import { EngineMetrics } from '../../../src/modules/metrics/engine-metrics';

function setup(maxLoras: number | null) {
  let stats: SchedulerStats = { numRunning: 0, numWaiting: 0, kvCacheUsage: 0, numBlocks: 8, blockSize: 16 };
  const engine = {
    stats: () => stats,
    health: () => ({ alive: true }),
    sleepState: () => ({ sleeping: false, level: 0 }),
  } as unknown as EngineClient;
  const registry = new Registry();
  const metrics = new EngineMetrics(registry, engine, { modelName: 'm', maxModelLen: 64, cacheConfigInfo: () => ({ engine: '0' }), maxLoras });
  const step = (running: string[], waiting: string[]) => {
    stats = { ...stats, runningLoraAdapters: running, waitingLoraAdapters: waiting };
    metrics.record(emptyIterationStats());
  };
  const series = async () => {
    const metric = await registry.getSingleMetric('vllm:lora_requests_info')?.get();
    return metric?.values ?? null;
  };
  return { registry, step, series };
}

describe('vllm:lora_requests_info', () => {
  it('is not registered without LoRA', async () => {
    const { step, series, registry } = setup(null);
    step([], []);
    expect(await series()).toBeNull();
    expect(await registry.metrics()).not.toContain('lora_requests_info');
  });

  it('stamps each step’s adapter set with the time, keeping earlier sets with their older times', async () => {
    const { step, series, registry } = setup(2);
    const before = Date.now() / 1000;
    step(['sql', 'chat'], ['poet']);
    const mid = Date.now() / 1000;
    await new Promise((r) => setTimeout(r, 20));
    step(['poet'], []);
    const after = Date.now() / 1000;
    const values = (await series())!;
    expect(values.map((v) => v.labels)).toEqual([
      { max_lora: '2', waiting_lora_adapters: 'poet', running_lora_adapters: 'sql,chat' },
      { max_lora: '2', waiting_lora_adapters: '', running_lora_adapters: 'poet' },
    ]);
    expect(values[0].value).toBeGreaterThanOrEqual(Math.floor(before * 1000) / 1000);
    expect(values[0].value).toBeLessThanOrEqual(mid + 0.001);
    expect(values[1].value).toBeGreaterThan(values[0].value);
    expect(values[1].value).toBeLessThanOrEqual(after + 0.001);
    const text = await registry.metrics();
    expect(text).toContain('# HELP vllm:lora_requests_info Running stats on lora requests.');
    expect(text).toMatch(/vllm:lora_requests_info\{max_lora="2",waiting_lora_adapters="",running_lora_adapters="poet"\} \d+\.?\d*/);
  });
});
