// KV transfer metrics under vLLM's NixlConnector names (NixlPromMetrics), registered only with
// --kv-transfer-config: TcpConnector follows the same pull flow, so the P/D dashboards and
// routers that read these work unchanged. There is no RDMA post step, hence no post-time metric.

import { Counter, Histogram, type Registry } from 'prom-client';
import type { KvTransferStats } from '../../engine/types';

/** vLLM's transfer-time buckets (seconds). */
const XFER_TIME_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0];
/** Bytes per transfer: 64 KiB .. 4 GiB by powers of 4. */
const BYTES_BUCKETS = Array.from({ length: 9 }, (_, i) => 2 ** (16 + 2 * i));

export class KvTransferMetrics {
  private readonly xferTime: Histogram<string>;
  private readonly bytes: Histogram<string>;
  private readonly failed: Counter<string>;
  private readonly expired: Counter<string>;

  constructor(
    registry: Registry,
    private readonly labels: { model_name: string; engine: string },
  ) {
    const labelNames = Object.keys(labels);
    const registers = [registry];
    this.xferTime = new Histogram({ name: 'vllm:nixl_xfer_time_seconds', help: 'Histogram of transfer duration for KV cache transfers (TcpConnector pulls).', labelNames, buckets: XFER_TIME_BUCKETS, registers });
    this.bytes = new Histogram({ name: 'vllm:nixl_bytes_transferred', help: 'Histogram of bytes transferred per KV cache transfer.', labelNames, buckets: BYTES_BUCKETS, registers });
    this.failed = new Counter({ name: 'vllm:nixl_num_failed_transfers_total', help: 'Number of failed KV cache transfers (each prefilled locally).', labelNames, registers });
    this.expired = new Counter({ name: 'vllm:nixl_num_kv_expired_reqs_total', help: 'Number of requests that had their KV expire unpulled (tracked on the prefill instance).', labelNames, registers });
    this.failed.inc(labels, 0);
    this.expired.inc(labels, 0);
  }

  record(stats: KvTransferStats): void {
    for (const s of stats.transferSeconds) this.xferTime.observe(this.labels, s);
    for (const b of stats.transferBytes) this.bytes.observe(this.labels, b);
    if (stats.numFailedTransfers > 0) this.failed.inc(this.labels, stats.numFailedTransfers);
    if (stats.numExpired > 0) this.expired.inc(this.labels, stats.numExpired);
  }
}
