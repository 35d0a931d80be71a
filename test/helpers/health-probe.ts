// /health latency while something else is in flight, measured against a baseline taken the same
// way on the same machine a moment before (a shared, busy machine makes absolute figures
// meaningless). Probes go one after another on their own kept-alive connection, so a probe that
// waits behind a blocked event loop shows the whole stall.

import { Agent, get } from 'node:http';

export interface ProbeReport {
  latencies: number[];
  max: number;
}

export class HealthProbe {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly baseUrl: string) {}

  private once(): Promise<number> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      get(`${this.baseUrl}/health`, { agent: this.agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - started));
      }).on('error', reject);
    });
  }

  /**
   * Probes every `intervalMs` until `work` settles (at least `minProbes` times); returns its result
   * and the latencies. The first probe goes out with the work, so a stall it causes shows.
   */
  async during<T>(work: Promise<T>, intervalMs = 20, minProbes = 1): Promise<{ result: T; report: ProbeReport }> {
    let settled = false;
    const tracked = work.finally(() => (settled = true));
    const latencies: number[] = [];
    while (!settled || latencies.length < minProbes) {
      latencies.push(await this.once());
      if (!settled || latencies.length < minProbes) await new Promise((r) => setTimeout(r, intervalMs));
    }
    return { result: await tracked, report: { latencies, max: Math.max(...latencies) } };
  }

  /** The same probing for `ms` with nothing else in flight. */
  async baseline(ms: number, intervalMs = 20): Promise<ProbeReport> {
    const { report } = await this.during(new Promise((r) => setTimeout(r, ms)), intervalMs);
    return report;
  }

  close(): void {
    this.agent.destroy();
  }
}
