// Owns this server's prom-client Registry (not the global one, so several apps can live in one
// process): vLLM engine metrics, HTTP metrics and the Node process metrics.

import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { reportedModelName, ServerConfig } from '../../config/server-config';
import type { EngineClient } from '../../engine/types';
import { ENGINE_CLIENT, SERVER_CONFIG } from '../engine/engine.tokens';
import { cacheConfigInfo } from './cache-config-info';
import { EngineMetrics } from './engine-metrics';
import { installHttpMetrics } from './http-metrics';
import { StatsLogger } from './stats-logger';

@Injectable()
export class MetricsService implements OnModuleInit, OnApplicationShutdown {
  readonly registry = new Registry();
  private readonly engineMetrics: EngineMetrics;
  private unsubscribe: (() => void) | null = null;
  private readonly statsLogger: StatsLogger | null;

  constructor(
    @Inject(ENGINE_CLIENT) private readonly engine: EngineClient,
    @Inject(SERVER_CONFIG) config: ServerConfig,
    adapterHost: HttpAdapterHost,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.engineMetrics = new EngineMetrics(this.registry, engine, {
      modelName: reportedModelName(config),
      maxModelLen: engine.maxModelLen,
      cacheConfigInfo: () => cacheConfigInfo(config, engine.stats()),
      maxLoras: engine.lora?.maxLoras ?? null,
      numSpeculativeTokens: config.speculativeConfig?.numSpeculativeTokens ?? null,
      kvTransfer: config.kvTransferConfig !== null,
    });
    this.statsLogger = config.disableLogStats ? null : new StatsLogger(engine, config.logStatsIntervalSeconds);
    // Installed here, while the app is being built, so the hooks precede every route.
    installHttpMetrics(adapterHost.httpAdapter.getInstance<FastifyInstance>(), this.registry);
  }

  onModuleInit(): void {
    this.unsubscribe = this.engine.onIteration((stats) => {
      this.engineMetrics.record(stats);
      this.statsLogger?.record(stats);
    });
    this.statsLogger?.start();
  }

  // After the HTTP server drained, so requests finishing during shutdown are still counted.
  onApplicationShutdown(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.statsLogger?.stop();
  }

  /** The Prometheus text exposition and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
