// The periodic throughput line (--disable-log-stats turns it off): vLLM's wording, info while
// busy (and once after), debug when idle.

import { Logger } from '@nestjs/common';
import { StatsLogger } from '../../../../src/modules/metrics/stats-logger';
import { FakeEngine } from '../../../helpers/fake-engine';

const iteration = (prompt: number, generation: number) => ({
  promptTokens: prompt,
  generationTokens: generation,
  timeToFirstTokens: [],
  interTokenLatencies: [],
  finished: [],
  numPreemptions: 0,
  prefixCacheQueries: 10,
  prefixCacheHits: 4,
  promptTokensCached: 0,
  promptTokensRecomputed: 0,
});

it('logs throughput, queue, KV usage and hit rate like vLLM', () => {
  const info = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  const debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
  try {
    const stats = new StatsLogger(new FakeEngine({ stats: { numRunning: 1, numWaiting: 2, kvCacheUsage: 0.25, numBlocks: 64, blockSize: 16 } }), 10);
    const t0 = performance.now();
    stats.record(iteration(100, 20));
    stats.log(t0 + 10_000);
    expect(info).toHaveBeenLastCalledWith(
      'Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 2 reqs, GPU KV cache usage: 25.0%, Prefix cache hit rate: 40.0%',
    );
    stats.log(t0 + 20_000); // idle, but the previous interval was busy: one more info line
    stats.log(t0 + 30_000); // idle twice: debug only
    expect(info).toHaveBeenCalledTimes(2);
    expect(debug).toHaveBeenCalledTimes(1);
  } finally {
    info.mockRestore();
    debug.mockRestore();
  }
});
