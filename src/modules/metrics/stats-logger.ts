// vLLM's periodic throughput line (LoggingStatLogger): every VLLM_LOG_STATS_INTERVAL seconds,
// at info level while there is traffic (debug when idle, to keep quiet logs quiet).
// --disable-log-stats turns it off.

import { Logger } from '@nestjs/common';
import type { EngineClient, IterationStats, SpecDecodingStats } from '../../engine/types';

export class StatsLogger {
  private readonly logger = new Logger('stats');
  private timer: NodeJS.Timeout | null = null;
  private promptTokens = 0;
  private generationTokens = 0;
  private prefixQueries = 0;
  private prefixHits = 0;
  private spec: SpecDecodingStats | null = null;
  private lastLogMs = performance.now(); // monotonic: a stepped wall clock must not skew the line
  private lastWasBusy = false;

  constructor(
    private readonly engine: EngineClient,
    private readonly intervalSeconds: number,
  ) {}

  record(stats: IterationStats): void {
    this.promptTokens += stats.promptTokens;
    this.generationTokens += stats.generationTokens;
    this.prefixQueries += stats.prefixCacheQueries;
    this.prefixHits += stats.prefixCacheHits;
    if (stats.specDecoding) this.addSpec(stats.specDecoding);
  }

  private addSpec(step: SpecDecodingStats): void {
    const sum = (this.spec ??= { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: [] });
    sum.numDrafts += step.numDrafts;
    sum.numDraftTokens += step.numDraftTokens;
    sum.numAcceptedTokens += step.numAcceptedTokens;
    step.acceptedPerPosition.forEach((n, pos) => (sum.acceptedPerPosition[pos] = (sum.acceptedPerPosition[pos] ?? 0) + n));
  }

  start(): void {
    this.timer = setInterval(() => this.log(), this.intervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  log(now = performance.now()): void {
    const seconds = Math.max(1e-3, (now - this.lastLogMs) / 1000);
    const prompt = this.promptTokens / seconds;
    const generation = this.generationTokens / seconds;
    const busy = prompt > 0 || generation > 0;
    const s = this.engine.stats();
    const hitRate = this.prefixQueries > 0 ? (100 * this.prefixHits) / this.prefixQueries : 0;
    const line =
      `Engine 000: Avg prompt throughput: ${prompt.toFixed(1)} tokens/s, Avg generation throughput: ${generation.toFixed(1)} tokens/s, ` +
      `Running: ${s.numRunning} reqs, Waiting: ${s.numWaiting} reqs, GPU KV cache usage: ${(s.kvCacheUsage * 100).toFixed(1)}%, ` +
      `Prefix cache hit rate: ${hitRate.toFixed(1)}%`;
    if (busy || this.lastWasBusy) this.logger.log(line);
    else this.logger.debug(line);
    const spec = this.spec;
    if (spec && spec.numDrafts > 0) this.logger.log(specDecodingLine(spec, seconds));
    this.spec = null;
    this.lastWasBusy = busy;
    this.lastLogMs = now;
    this.promptTokens = 0;
    this.generationTokens = 0;
  }
}

/** vLLM's SpecDecodingLogging line for one interval. */
export function specDecodingLine(spec: SpecDecodingStats, seconds: number): string {
  const meanLength = 1 + spec.numAcceptedTokens / spec.numDrafts;
  const rate = spec.numDraftTokens > 0 ? (100 * spec.numAcceptedTokens) / spec.numDraftTokens : 0;
  const perPosition = spec.acceptedPerPosition.map((n) => (n / spec.numDrafts).toFixed(3)).join(', ');
  return (
    `SpecDecoding metrics: Mean acceptance length: ${meanLength.toFixed(2)}, Accepted throughput: ${(spec.numAcceptedTokens / seconds).toFixed(2)} tokens/s, ` +
    `Drafted throughput: ${(spec.numDraftTokens / seconds).toFixed(2)} tokens/s, Accepted: ${spec.numAcceptedTokens} tokens, Drafted: ${spec.numDraftTokens} tokens, ` +
    `Per-position acceptance rate: ${perPosition}, Avg Draft acceptance rate: ${rate.toFixed(1)}%`
  );
}
