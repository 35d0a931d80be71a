// vLLM's periodic throughput line (LoggingStatLogger): every VLLM_LOG_STATS_INTERVAL seconds,
// at info level while there is traffic (debug when idle, to keep quiet logs quiet).
// --disable-log-stats turns it off.

import { Logger } from '@nestjs/common';
import type { EngineClient, IterationStats } from '../../engine/types';

export class StatsLogger {
  private readonly logger = new Logger('stats');
  private timer: NodeJS.Timeout | null = null;
  private promptTokens = 0;
  private generationTokens = 0;
  private prefixQueries = 0;
  private prefixHits = 0;
  private lastLogMs = Date.now();
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
  }

  start(): void {
    this.timer = setInterval(() => this.log(), this.intervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  log(now = Date.now()): void {
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
    this.lastWasBusy = busy;
    this.lastLogMs = now;
    this.promptTokens = 0;
    this.generationTokens = 0;
  }
}
