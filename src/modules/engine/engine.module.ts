// EngineModule (global): provides SERVER_CONFIG, SERVED_MODEL_INFO, EngineService, the ENGINE_CLIENT token
// (the client EngineService owns) and SERVED_MODELS (with the --lora-modules adapters loaded). The engine is created once, before the app starts listening.
// Pass `engine` to serve an already-built client (in-process tests); it is shut down with the app.

import { DynamicModule, Global, Module } from '@nestjs/common';
import { createEngine } from '../../engine';
import type { EngineClient } from '../../engine/types';
import { toEngineOptions } from '../../config/engine-args';
import type { ServerConfig } from '../../config/server-config';
import { EngineService } from './engine.service';
import { GENERATION_MODEL, type ServedModel } from '../served-routes';
import { ServedModels } from '../../serving/lora/served-models';
import { servedModelsOptions } from './served-models-options';
import { ENGINE_CLIENT, SERVED_MODEL_INFO, SERVED_MODELS, SERVER_CONFIG } from './engine.tokens';

@Global()
@Module({})
export class EngineModule {
  static forRoot(config: ServerConfig, engine?: EngineClient, servedModel: ServedModel = GENERATION_MODEL): DynamicModule {
    return {
      module: EngineModule,
      providers: [
        { provide: SERVER_CONFIG, useValue: config },
        { provide: SERVED_MODEL_INFO, useValue: servedModel },
        {
          provide: EngineService,
          useFactory: async () => new EngineService(engine ?? (await createEngine(toEngineOptions(config)))),
        },
        { provide: ENGINE_CLIENT, inject: [EngineService], useFactory: (service: EngineService) => service.client },
        {
          provide: SERVED_MODELS,
          inject: [ENGINE_CLIENT],
          // A static adapter that fails to load fails the start, with the loader's message (vLLM).
          useFactory: async (client: EngineClient) => {
            const models = new ServedModels(servedModelsOptions(config), client);
            await models.loadStatic(config.loraModules);
            return models;
          },
        },
      ],
      exports: [SERVER_CONFIG, SERVED_MODEL_INFO, EngineService, ENGINE_CLIENT, SERVED_MODELS],
    };
  }
}
