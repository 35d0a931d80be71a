// EngineService: the one Nest provider that owns the engine (DESIGN "the only door"). It holds
// the EngineClient built by createEngine(), which ENGINE_CLIENT hands out as is (nothing to
// forward, so a new engine operation needs no edit here), and shuts it down once, after the HTTP
// server has stopped accepting and drained (onApplicationShutdown runs after the adapter closes).

import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { EngineClient } from '../../engine/types';

export class EngineService implements OnApplicationShutdown {
  private readonly logger = new Logger('EngineService');
  private stopped = false;

  constructor(readonly client: EngineClient) {}

  /** Idempotent: the signal handlers and the application's shutdown hook may both call it. */
  async shutdown(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.client.shutdown();
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.shutdown();
    } catch (err) {
      this.logger.error(`engine shutdown failed: ${(err as Error).message}`);
    }
  }
}
