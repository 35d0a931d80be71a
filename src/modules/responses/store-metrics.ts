// The responses store's health as a gauge: /health stays the engine's liveness (a Kubernetes
// liveness probe must not restart replicas because a shared Redis is away), so alerts read this.

import { Gauge, type Registry } from 'prom-client';
import type { ResponsesStore } from '../../serving/responses/store';

export function registerStoreGauge(registry: Registry, store: ResponsesStore): void {
  new Gauge({
    name: 'ortllm_responses_store_up',
    help: '1 while the responses store answers, 0 while it is unreachable or too slow (stored-response requests then get 503).',
    labelNames: ['backend'],
    registers: [registry],
    collect() {
      this.set({ backend: store.kind }, store.reachable ? 1 : 0);
    },
  });
}
