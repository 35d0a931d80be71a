// The Responses API: its serving class on the engine, the flags and the responses store
// (--responses-store), which is connected at start-up and closed at shutdown.

import { Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { ServerConfig } from '../../config/server-config';
import type { EngineClient } from '../../engine/types';
import { servingOptionsFrom } from '../../serving/serving-options';
import { ResponsesServing } from '../../serving/responses/responses-serving';
import { createResponsesStore, isRedisUrl, type ResponsesStore } from '../../serving/responses/store';
import type { ServedModels } from '../../serving/lora/served-models';
import { ENGINE_CLIENT, SERVED_MODELS, SERVER_CONFIG } from '../engine/engine.tokens';
import { MetricsModule } from '../metrics/metrics.module';
import { MetricsService } from '../metrics/metrics.service';
import { ResponsesController } from './responses.controller';
import { registerStoreGauge } from './store-metrics';

const RESPONSES_STORE = Symbol('RESPONSES_STORE');

@Module({
  imports: [MetricsModule],
  controllers: [ResponsesController],
  providers: [
    {
      provide: RESPONSES_STORE,
      inject: [SERVER_CONFIG, MetricsService],
      useFactory: async (config: ServerConfig, metrics: MetricsService): Promise<ResponsesStore> => {
        const store = await createResponsesStore({
          url: config.responsesStore,
          ttlSeconds: config.responsesStoreTtlSeconds,
          maxBytes: config.responsesStoreMaxBytes,
          timeoutMs: config.responsesStoreTimeoutSeconds * 1000,
        });
        const where = isRedisUrl(config.responsesStore) ? ` at ${new URL(config.responsesStore).host}` : '';
        new Logger('Responses').log(`responses store: ${store.kind}${where}`);
        registerStoreGauge(metrics.registry, store);
        return store;
      },
    },
    {
      provide: ResponsesServing,
      inject: [ENGINE_CLIENT, SERVER_CONFIG, RESPONSES_STORE, SERVED_MODELS],
      useFactory: async (engine: EngineClient, config: ServerConfig, store: ResponsesStore, models: ServedModels) => {
        const serving = new ResponsesServing(engine, servingOptionsFrom(config, models, engine), store, {
          maxDepth: config.responsesChainMaxDepth,
          maxBytes: config.responsesChainMaxBytes,
        });
        await serving.start();
        return serving;
      },
    },
  ],
})
export class ResponsesModule implements OnApplicationShutdown {
  constructor(@Inject(ResponsesServing) private readonly serving: ResponsesServing) {}

  async onApplicationShutdown(): Promise<void> {
    await this.serving.close();
  }
}
